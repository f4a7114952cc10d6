package operator

// ProcsFromCPURequests returns the GOMAXPROCS for a controller whose container requests millis millicores of CPU
// (settings.Settings.CPURequests, from CPU_REQUESTS), on a process whose GOMAXPROCS is now current, and whether
// to set it. It is the request rounded up, at least 2 (the floor Go itself keeps when it sizes GOMAXPROCS from a
// container's CPU limit), and only when that is lower than current: the runtime already follows a CPU limit, and
// a request above it adds nothing. GOMAXPROCS in the environment wins.
func ProcsFromCPURequests(millis int64, current int, getenv func(string) string) (int, bool) {
	if getenv("GOMAXPROCS") != "" || millis <= 0 {
		return 0, false
	}
	procs := max(int((millis+999)/1000), 2)
	if procs >= current {
		return 0, false
	}
	return procs, true
}
