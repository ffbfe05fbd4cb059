package openclaw

// AbortTimeout lets the tests check a turn waits out the bound on an unanswered abort.
const AbortTimeout = abortTimeout
