"""Exit codes, one definition each: the command line's and a campaign worker's."""

# `discharge-fuzz run` (and the command line as a whole)
EXIT_CLEAN = 0     # nothing new found
EXIT_FOUND = 1     # new (unknown) findings
EXIT_ERROR = 2     # bad usage, a bad file, or the run itself failed (every subcommand)

# `discharge-fuzz replay / minimize / report`
EXIT_OK = 0        # every file behaves as recorded; done
EXIT_CHANGED = 1   # a file does not (a seed fails, a regression is fixed or fails otherwise)

# A campaign worker's own (fuzz.campaign.workers), read by its supervisor
EXIT_OOM = 86      # the worker ran out of memory (MemoryError)
EXIT_SETUP = 87    # the worker could not start: not a finding, a campaign error
EXIT_BROKEN = 88   # the fuzzer itself raised: not a finding, a campaign error
