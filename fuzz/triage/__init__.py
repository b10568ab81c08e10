"""Triage: what becomes of a failure. Its signature and finding (`findings`),
filing it (`filing`: minimized, a verified reproducer, a regression, a
report), the corpus, reports, the affected JAX releases (`bisect`,
`releases`), and the replay / minimize / report commands (`commands`)."""
