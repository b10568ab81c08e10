"""What the tiers tolerate, and only where it is measured to hold: known
findings (`known_findings`: JAX bugs the properties already know, each
family's entries in fuzz/ops/<family>/known.py), the unsupported table
(`unsupported`: what a path is known not to support) and the releases each
entry is seen on (`seen_on`, measured by ``discharge-fuzz bisect
--suppressions``)."""
