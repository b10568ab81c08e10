"""The fuzzer's properties over real JAX: what CI and the main job check."""
from hypothesis import given

from fuzz.campaign.property import check_property
from strategies.programs import invalid_programs, programs


@given(programs())
def test_valid_programs_keep_every_invariant(case):
    check_property(case)


@given(invalid_programs())
def test_invalid_programs_get_the_clean_error(case):
    check_property(case)
