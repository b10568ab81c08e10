"""IR reduction: smaller, same signature, and never a different program."""
from fuzz import findings, ir, minimize, oracles
from fuzz.known_findings import BY_ID


def _first_signature(case):
    return findings.signature(oracles.check(case).failures[0])


def test_a_padded_real_bug_shrinks_to_its_one_line_trigger():
    # check-sem-avals-last-transform-not-indexer, buried in noise.
    padded = ir.Case(
        (ir.Semaphore("regular", (3, 2), scoped=True), ir.Semaphore("int16", (2,))),
        (ir.Signal(ir.View(0, (ir.At((ir.Int(2, True),)), ir.At((ir.Int(1),)))), ir.Int(3, True)),
         ir.Read(ir.View(1, (ir.At((ir.Int(1),)),))),
         ir.Signal(ir.View(1, (ir.At((ir.Ds(ir.Int(0, True), 1),)), ir.Reshape(()))), ir.Int(5)),
         ir.Wait(ir.View(1, (ir.At((ir.Int(0),)),)), ir.Int(0), decrement=False)))
    sig = _first_signature(padded)
    result = minimize.minimize(padded, findings.same_failure(sig))
    small = result.case
    assert _first_signature(small) == sig
    assert len(small.body) == 1 and len(small.semaphores) == 1 and len(small.paths) == 1
    assert small.semaphores[0].shape == () and not small.semaphores[0].scoped
    assert small.body[0].view.transforms == (ir.Reshape(()),)
    assert not small.dynamic_values


def test_an_invalid_case_never_shrinks_into_a_valid_one():
    # JAX accepts the out-of-bounds index silently, and the valid signal next
    # to it "fails" the same way once the bad one is dropped: the reduction
    # must keep the mistake.
    bad = BY_ID["static-index-out-of-bounds-accepted"].example
    case = ir.Case(
        (ir.Semaphore("int16", (2,)), *bad.semaphores),
        (ir.Signal(ir.View(0, (ir.At((ir.Int(0),)),)), ir.Int(1)),
         ir.Signal(ir.View(1, (ir.At((ir.Int(3),)),)), ir.Int(1))),
        expect=bad.expect)
    result = minimize.minimize(case, findings.same_failure(_first_signature(case)))
    assert minimize.mistakes(result.case) == {"out of bounds"}
    assert len(result.case.body) == 1


def test_mistakes_match_what_invalid_programs_plant():
    sem = (ir.Semaphore("int16", (2,)),)
    assert minimize.mistakes(ir.Case(sem, (ir.Read(ir.View(0)),))) == {"non-scalar view"}
    assert minimize.mistakes(ir.Case(sem, (ir.Signal(ir.View(0, (ir.Bitcast("int8"), ir.At((ir.Int(0),)))),
                                                     ir.Int(1)),))) >= {"bitcast"}
    assert minimize.mistakes(ir.Case((ir.Semaphore("float32", ()),), (ir.Wait(ir.View(0)),))) == {"dtype"}
    assert minimize.mistakes(ir.Case(sem, (ir.Signal(ir.View(0, (ir.At((ir.Int(1),)),)),
                                                     ir.Int(2**40)),))) == {"overflow"}


def test_attempts_are_bounded():
    case = BY_ID["check-sem-avals-last-transform-not-indexer"].example
    result = minimize.minimize(case, lambda c: False, max_attempts=3)
    assert result.attempts <= 3 and result.case == case
