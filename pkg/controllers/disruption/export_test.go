package disruption

// CommandWorkers is commandWorkers, for the tests of package disruption_test.
const CommandWorkers = commandWorkers
