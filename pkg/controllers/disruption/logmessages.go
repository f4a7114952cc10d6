package disruption

// The messages of the log lines that mark a command's steps, at info level: the benchmarks count them to say what
// a disruption waited for (test/e2e/framework.CommandSteps), so they are stable.
const (
	// LogStarted: a command started (its candidates recorded, its replacements on their way).
	LogStarted = "disrupting"
	// LogNotStarted: a decided command was not started, as its pods would not fit on the nodes there are now in
	// the order the kube-scheduler could place them.
	LogNotStarted = "not starting disruption: its pods do not fit on the nodes there are now"
	// LogExtraReplacements: a drift command launched more replacements, other pods having taken its own.
	LogExtraReplacements = "launching more replacements: the pods of the command's nodes no longer fit on its replacements"
	// LogDrainedAfterContention: a command drained after waiting ContentionWait for other moving pods to land.
	LogDrainedAfterContention = "draining although other moving pods could take the room of its pods"
	// LogShrunk: a command went on without the candidates whose pods no longer fit.
	LogShrunk = "disruption goes on without the nodes whose pods no longer fit"
	// LogAbandoned: a command was abandoned (its candidates stay in service).
	LogAbandoned = "abandoning disruption"
)
