"""How a maintainer ranks a report (shared/MAINTAINER_REVIEW.md), most
severe first. An oracle says which class its failures fall in; a known
finding that a maintainer has reviewed says its own (`KnownFinding.severity`).
"""
WRONG_VALUE = "silent wrong value"
CRASH = "crash or hang on valid code"
REFUSED = "valid code refused"
USABILITY = "unclear or missing error on invalid code"

SEVERITIES = (WRONG_VALUE, CRASH, REFUSED, USABILITY)
