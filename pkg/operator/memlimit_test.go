package operator

import (
	"testing"
)

func TestSoftMemoryLimit(t *testing.T) {
	const mib = 1 << 20
	tests := []struct {
		name    string
		limit   int64
		env     map[string]string
		want    int64
		wantSet bool
	}{
		{name: "none (Karpenter's default -1)", limit: -1},
		{name: "zero is none", limit: 0},
		{name: "GOMEMLIMIT wins", limit: 160 * mib, env: map[string]string{"GOMEMLIMIT": "100MiB"}},
		{name: "160 MiB container: 44 MiB outside the heap", limit: 160 * mib, want: 116 * mib, wantSet: true},
		{name: "1 GiB container: a tenth outside", limit: 1024 * mib, want: 1024*mib - 1024*mib/10, wantSet: true},
		{name: "tiny container: never below half", limit: 64 * mib, want: 32 * mib, wantSet: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, set := SoftMemoryLimit(tt.limit, func(k string) string { return tt.env[k] })
			if got != tt.want || set != tt.wantSet {
				t.Errorf("SoftMemoryLimit = %d, %v; want %d, %v", got, set, tt.want, tt.wantSet)
			}
		})
	}
}

func TestProcsFromCPURequests(t *testing.T) {
	tests := []struct {
		name      string
		millis    int64
		numCPU    int
		env       map[string]string
		want      int
		wantApply bool
	}{
		{name: "1 core requested on 16: 2 (the runtime's floor for a CPU limit)", millis: 1000, numCPU: 16, want: 2, wantApply: true},
		{name: "half a core: 2", millis: 500, numCPU: 16, want: 2, wantApply: true},
		{name: "3.5 cores: 4", millis: 3500, numCPU: 16, want: 4, wantApply: true},
		{name: "more than the machine: the runtime's own", millis: 64000, numCPU: 16},
		{name: "GOMAXPROCS wins", millis: 1000, numCPU: 16, env: map[string]string{"GOMAXPROCS": "8"}},
		{name: "a 2-core machine keeps 2", millis: 1000, numCPU: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, apply := ProcsFromCPURequests(tt.millis, tt.numCPU, func(k string) string { return tt.env[k] })
			if got != tt.want || apply != tt.wantApply {
				t.Errorf("ProcsFromCPURequests = %d, %v; want %d, %v", got, apply, tt.want, tt.wantApply)
			}
		})
	}
}

func TestDefaultGCPercent(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		want    int
		wantSet bool
	}{
		{name: "GOGC unset: 50", want: 50, wantSet: true},
		{name: "GOGC wins", env: map[string]string{"GOGC": "100"}},
		{name: "GOGC=off wins", env: map[string]string{"GOGC": "off"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, set := DefaultGCPercent(func(k string) string { return tt.env[k] })
			if got != tt.want || set != tt.wantSet {
				t.Errorf("DefaultGCPercent = %d, %v; want %d, %v", got, set, tt.want, tt.wantSet)
			}
		})
	}
}
