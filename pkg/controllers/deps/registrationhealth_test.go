package deps

import "testing"

func TestRegistrationHealth(t *testing.T) {
	tests := []struct {
		name     string
		outcomes []bool
		want     RegistrationStatus
	}{
		{name: "nothing recorded", want: RegistrationUnknown},
		{name: "one success", outcomes: []bool{true}, want: RegistrationHealthy},
		{name: "one failure of four", outcomes: []bool{true, true, false, true}, want: RegistrationHealthy},
		{name: "one failure alone", outcomes: []bool{false}, want: RegistrationHealthy},
		{name: "two failures", outcomes: []bool{false, false}, want: RegistrationUnhealthy},
		{name: "two failures of the last four", outcomes: []bool{true, false, true, false}, want: RegistrationUnhealthy},
		{name: "old failures leave the window", outcomes: []bool{false, false, true, true, true, true}, want: RegistrationHealthy},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := NewRegistrationHealth()
			got := r.Status("np")
			for _, ok := range tt.outcomes {
				got = r.Record("np", ok)
			}
			if got != tt.want || r.Status("np") != tt.want {
				t.Errorf("status %v, want %v", got, tt.want)
			}
		})
	}
	r := NewRegistrationHealth()
	for _, s := range []RegistrationStatus{RegistrationHealthy, RegistrationUnhealthy, RegistrationUnknown} {
		r.Set("np", s)
		if got := r.Status("np"); got != s {
			t.Errorf("Set(%v): status %v", s, got)
		}
	}
}
