package settings

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestParseDefaults(t *testing.T) {
	s, err := Parse(nil, env(map[string]string{"CLUSTER_NAME": "demo"}))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	want := &Settings{
		ClusterName:                      "demo",
		VMMemoryOverheadPercent:          0.075,
		BatchIdleDuration:                time.Second,
		BatchMaxDuration:                 10 * time.Second,
		RegistrationTimeout:              15 * time.Minute,
		RebootObservationWindow:          20 * time.Minute,
		KubernetesVersionRefreshInterval: 5 * time.Minute,
		MetricsPort:                      8080,
		HealthProbePort:                  8081,
		LogLevel:                         "info",
		KubeClientQPS:                    200,
		KubeClientBurst:                  300,
		PreferencePolicy:                 PreferencePolicyRespect,
		MinValuesPolicy:                  MinValuesPolicyStrict,
		FeatureGates:                     defaultFeatureGates(),
		AWSFeatureGates:                  defaultAWSFeatureGates(),

		DisableControllerWarmup:      true,
		LeaderElectionName:           "karpenter-leader-election",
		MemoryLimit:                  -1,
		CPURequests:                  1000,
		LogOutputPaths:               []string{"stdout"},
		LogErrorOutputPaths:          []string{"stderr"},
		IgnoreDRARequests:            true,
		AMIRefreshInterval:           time.Minute,
		SubnetRefreshInterval:        time.Minute,
		SecurityGroupRefreshInterval: time.Minute,
	}
	if diff := cmp.Diff(want, s); diff != "" {
		t.Errorf("defaults (-want +got):\n%s", diff)
	}
}

func TestParseSources(t *testing.T) {
	tests := []struct {
		name  string
		args  []string
		env   map[string]string
		check func(*Settings) any
		want  any
	}{
		{"env sets value", nil, map[string]string{"CLUSTER_NAME": "a", "BATCH_IDLE_DURATION": "2s"},
			func(s *Settings) any { return s.BatchIdleDuration }, 2 * time.Second},
		{"flag beats env", []string{"--cluster-name=fromflag"}, map[string]string{"CLUSTER_NAME": "fromenv"},
			func(s *Settings) any { return s.ClusterName }, "fromflag"},
		{"bool flag without value", []string{"--isolated-vpc"}, map[string]string{"CLUSTER_NAME": "a"},
			func(s *Settings) any { return s.IsolatedVPC }, true},
		{"bool env", nil, map[string]string{"CLUSTER_NAME": "a", "DISABLE_LEADER_ELECTION": "true"},
			func(s *Settings) any { return s.DisableLeaderElection }, true},
		{"feature gate on", nil, map[string]string{"CLUSTER_NAME": "a", "FEATURE_GATES": "SpotToSpotConsolidation=true"},
			func(s *Settings) any { return s.FeatureEnabled(FeatureSpotToSpotConsolidation) }, true},
		{"feature gate others keep defaults", nil, map[string]string{"CLUSTER_NAME": "a", "FEATURE_GATES": "SpotToSpotConsolidation=true"},
			func(s *Settings) any { return s.FeatureEnabled(FeatureNodeRepair) }, false},
		{"node repair tolerations", nil, map[string]string{"CLUSTER_NAME": "a", "FEATURE_GATES": "NodeRepair=true", "NODE_REPAIR_TOLERATIONS": "KernelReady=15s, Ready=2m"},
			func(s *Settings) any { return s.NodeRepairTolerations }, map[string]time.Duration{"KernelReady": 15 * time.Second, "Ready": 2 * time.Minute}},
		{"unimplemented gate off is accepted", nil, map[string]string{"CLUSTER_NAME": "a", "FEATURE_GATES": "ReservedCapacity=false, NodeOverlay=false"},
			func(s *Settings) any { return s.FeatureEnabled(FeatureReservedCapacity) }, false},
		{"reserved capacity on by default, as in Karpenter", nil, map[string]string{"CLUSTER_NAME": "a"},
			func(s *Settings) any { return s.FeatureEnabled(FeatureReservedCapacity) }, true},
		{"policy", []string{"--preference-policy", "Ignore", "--min-values-policy=BestEffort"}, map[string]string{"CLUSTER_NAME": "a"},
			func(s *Settings) any { return s.PreferencePolicy + "/" + s.MinValuesPolicy }, "Ignore/BestEffort"},
		{"overhead", nil, map[string]string{"CLUSTER_NAME": "a", "VM_MEMORY_OVERHEAD_PERCENT": "0"},
			func(s *Settings) any { return s.VMMemoryOverheadPercent }, 0.0},
		{"endpoint", nil, map[string]string{"CLUSTER_NAME": "a", "CLUSTER_ENDPOINT": "https://1.2.3.4:6443"},
			func(s *Settings) any { return s.ClusterEndpoint }, "https://1.2.3.4:6443"},
		{"registration timeout", []string{"--registration-timeout=90s"}, map[string]string{"CLUSTER_NAME": "a"},
			func(s *Settings) any { return s.RegistrationTimeout }, 90 * time.Second},
		{"removed gate warns", nil, map[string]string{"CLUSTER_NAME": "a", "FEATURE_GATES": "Drift=true,NodeRepair=true"},
			func(s *Settings) any { return s.Warnings }, []string{"feature gate Drift does nothing: drift is always detected and acted on since Karpenter v1.0, which removed the gate; to keep drifted nodes, use NodePool disruption budgets with reasons: [Drifted]"}},
		{"removed gate leaves the others", nil, map[string]string{"CLUSTER_NAME": "a", "FEATURE_GATES": "Drift=false,NodeRepair=true"},
			func(s *Settings) any { return s.FeatureEnabled(FeatureNodeRepair) }, true},
		{"no warnings by default", nil, map[string]string{"CLUSTER_NAME": "a"},
			func(s *Settings) any { return s.Warnings }, []string(nil)},
		{"Karpenter v1.15's chart gates", nil, map[string]string{"CLUSTER_NAME": "a",
			"FEATURE_GATES":     "ReservedCapacity=true,SpotToSpotConsolidation=false,NodeRepair=false,NodeOverlay=false,StaticCapacity=false,CapacityBuffer=false,TerminateFirstDrift=false,TerminateFirstRepair=false,PodDeletionCostManagement=false",
			"AWS_FEATURE_GATES": "NodeClassCEL=false,DRANVIDIAGPU=false,DRAEFA=false,RebootForRepair=false"},
			func(s *Settings) any { return s.FeatureGates }, defaultFeatureGates()},
		{"DRA requests planned for", nil, map[string]string{"CLUSTER_NAME": "a", "IGNORE_DRA_REQUESTS": "false",
			"AWS_FEATURE_GATES": "DRANVIDIAGPU=true,DRAEFA=true"},
			func(s *Settings) any {
				return []bool{s.IgnoreDRARequests, s.AWSFeatureEnabled(AWSFeatureDRANVIDIAGPU), s.AWSFeatureEnabled(AWSFeatureDRAEFA)}
			}, []bool{false, true, true}},
		{"log paths", []string{"--log-output-paths=stderr, /var/log/dovetail.log"}, map[string]string{"CLUSTER_NAME": "a"},
			func(s *Settings) any { return s.LogOutputPaths }, []string{"stderr", "/var/log/dovetail.log"}},
		{"empty log level is info", []string{"--log-level="}, map[string]string{"CLUSTER_NAME": "a"},
			func(s *Settings) any { return s.LogLevel }, "info"},
		{"memory limit in bytes", nil, map[string]string{"CLUSTER_NAME": "a", "MEMORY_LIMIT": "167772160"},
			func(s *Settings) any { return s.MemoryLimit }, int64(167772160)},
		{"memory limit with a unit", []string{"--memory-limit=160MiB"}, map[string]string{"CLUSTER_NAME": "a"},
			func(s *Settings) any { return s.MemoryLimit }, int64(160 << 20)},
		{"memory limit zero is none", nil, map[string]string{"CLUSTER_NAME": "a", "MEMORY_LIMIT": "0"},
			func(s *Settings) any { return s.MemoryLimit }, int64(0)},
		{"cpu requests", nil, map[string]string{"CLUSTER_NAME": "a", "CPU_REQUESTS": "2500"},
			func(s *Settings) any { return s.CPURequests }, int64(2500)},
		{"cpu requests zero reads as 1000, as in Karpenter", nil, map[string]string{"CLUSTER_NAME": "a", "CPU_REQUESTS": "0"},
			func(s *Settings) any { return s.CPURequests }, int64(1000)},
		{"lease", []string{"--leader-election-name=dovetail", "--leader-election-namespace=karpenter"}, map[string]string{"CLUSTER_NAME": "a"},
			func(s *Settings) any { return s.LeaderElectionName + "/" + s.LeaderElectionNamespace }, "dovetail/karpenter"},
		{"refresh intervals", []string{"--ami-refresh-interval=5m"}, map[string]string{"CLUSTER_NAME": "a", "SUBNET_REFRESH_INTERVAL": "2m", "SECURITY_GROUP_REFRESH_INTERVAL": "3m"},
			func(s *Settings) any {
				return []time.Duration{s.AMIRefreshInterval, s.SubnetRefreshInterval, s.SecurityGroupRefreshInterval}
			}, []time.Duration{5 * time.Minute, 2 * time.Minute, 3 * time.Minute}},
		{"warm-up", nil, map[string]string{"CLUSTER_NAME": "a", "DISABLE_CONTROLLER_WARMUP": "false"},
			func(s *Settings) any { return s.DisableControllerWarmup }, false},
		{"dry run off", nil, map[string]string{"CLUSTER_NAME": "a", "DISABLE_DRY_RUN": "true"},
			func(s *Settings) any { return s.DisableDryRun }, true},
		{"legacy node repair", []string{"--legacy-node-repair"}, map[string]string{"CLUSTER_NAME": "a"},
			func(s *Settings) any { return s.LegacyNodeRepair }, true},
		{"service", nil, map[string]string{"CLUSTER_NAME": "a", "KARPENTER_SERVICE": "karpenter"},
			func(s *Settings) any { return s.KarpenterService }, "karpenter"},
		{"scheduler config without constraints", nil, map[string]string{"CLUSTER_NAME": "a", "SCHEDULER_CONFIG": "podTopologySpread: {}"},
			func(s *Settings) any { return s.SchedulerConfig }, "podTopologySpread: {}"},
		{"scheduler config with default constraints", nil, map[string]string{"CLUSTER_NAME": "a", "SCHEDULER_CONFIG": "podTopologySpread:\n  defaultConstraints:\n  - {maxSkew: 1, topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: DoNotSchedule}\n  - {maxSkew: 3, topologyKey: kubernetes.io/hostname, whenUnsatisfiable: ScheduleAnyway}\n"},
			func(s *Settings) any { return s.DefaultSpreadConstraints }, []corev1.TopologySpreadConstraint{
				{MaxSkew: 1, TopologyKey: "topology.kubernetes.io/zone", WhenUnsatisfiable: corev1.DoNotSchedule},
				{MaxSkew: 3, TopologyKey: "kubernetes.io/hostname", WhenUnsatisfiable: corev1.ScheduleAnyway}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Parse(tt.args, env(tt.env))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if diff := cmp.Diff(tt.want, tt.check(s)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{"missing cluster name", nil, nil, "CLUSTER_NAME (--cluster-name) is required"},
		{"blank cluster name", nil, map[string]string{"CLUSTER_NAME": "  "}, "CLUSTER_NAME (--cluster-name) is required"},
		{"bad duration", nil, map[string]string{"CLUSTER_NAME": "a", "BATCH_IDLE_DURATION": "soon"},
			`BATCH_IDLE_DURATION (--batch-idle-duration) from env: must be a duration such as 1s or 500ms, got "soon"`},
		{"negative duration", []string{"--batch-max-duration=-1s"}, map[string]string{"CLUSTER_NAME": "a"},
			"BATCH_MAX_DURATION (--batch-max-duration) from flag: must be positive, got -1s"},
		{"idle above max", nil, map[string]string{"CLUSTER_NAME": "a", "BATCH_IDLE_DURATION": "20s"},
			"BATCH_IDLE_DURATION (--batch-idle-duration) 20s must not exceed BATCH_MAX_DURATION (--batch-max-duration) 10s"},
		{"bad overhead", nil, map[string]string{"CLUSTER_NAME": "a", "VM_MEMORY_OVERHEAD_PERCENT": "1.5"},
			"VM_MEMORY_OVERHEAD_PERCENT (--vm-memory-overhead-percent) from env: must be in [0, 1), got 1.5"},
		{"bad port", nil, map[string]string{"CLUSTER_NAME": "a", "METRICS_PORT": "70000"},
			`METRICS_PORT (--metrics-port) from env: must be a port number in 1..65535, got "70000"`},
		{"same ports", nil, map[string]string{"CLUSTER_NAME": "a", "METRICS_PORT": "8081"},
			"METRICS_PORT (--metrics-port) and HEALTH_PROBE_PORT (--health-probe-port) must differ, both are 8081"},
		{"bad log level", nil, map[string]string{"CLUSTER_NAME": "a", "LOG_LEVEL": "verbose"},
			`LOG_LEVEL (--log-level) from env: must be one of debug, info, warn, error, got "verbose"`},
		{"bad policy", nil, map[string]string{"CLUSTER_NAME": "a", "PREFERENCE_POLICY": "respect"},
			`PREFERENCE_POLICY (--preference-policy) from env: must be one of Respect, Ignore, got "respect"`},
		{"unknown gate", nil, map[string]string{"CLUSTER_NAME": "a", "FEATURE_GATES": "Consolidation=true"},
			`FEATURE_GATES (--feature-gates) from env: unknown feature gate "Consolidation" (known: NodeRepair, ReservedCapacity, SpotToSpotConsolidation, NodeOverlay, StaticCapacity, CapacityBuffer, TerminateFirstDrift, TerminateFirstRepair, PodDeletionCostManagement)`},
		{"unknown gate among known ones", []string{"--feature-gates=SpotToSpotConsolidation=true,nodeRepair=true"}, map[string]string{"CLUSTER_NAME": "a"},
			`FEATURE_GATES (--feature-gates) from flag: unknown feature gate "nodeRepair" (known: NodeRepair, ReservedCapacity, SpotToSpotConsolidation, NodeOverlay, StaticCapacity, CapacityBuffer, TerminateFirstDrift, TerminateFirstRepair, PodDeletionCostManagement)`},
		{"removed gate with a bad value", nil, map[string]string{"CLUSTER_NAME": "a", "FEATURE_GATES": "Drift=yes"},
			`FEATURE_GATES (--feature-gates) from env: feature gate Drift: value must be true or false, got "yes"`},
		{"unknown AWS gate", nil, map[string]string{"CLUSTER_NAME": "a", "AWS_FEATURE_GATES": "NodeRepair=false"},
			`AWS_FEATURE_GATES (--aws-feature-gates) from env: unknown feature gate "NodeRepair" (known: NodeClassCEL, DRANVIDIAGPU, DRAEFA, RebootForRepair)`},
		{"cluster state observability", nil, map[string]string{"CLUSTER_NAME": "a", "DISABLE_CLUSTER_STATE_OBSERVABILITY": "true"},
			"DISABLE_CLUSTER_STATE_OBSERVABILITY (--disable-cluster-state-observability) from env: true is not supported yet: Dovetail's cluster-state metrics and condition events cannot be turned off"},
		{"refresh below a minute", nil, map[string]string{"CLUSTER_NAME": "a", "AMI_REFRESH_INTERVAL": "30s"},
			"AMI_REFRESH_INTERVAL (--ami-refresh-interval) from env: must be at least 1m, got 30s"},
		{"refresh not a duration", []string{"--security-group-refresh-interval=often"}, map[string]string{"CLUSTER_NAME": "a"},
			`SECURITY_GROUP_REFRESH_INTERVAL (--security-group-refresh-interval) from flag: must be a duration such as 1m or 5m, got "often"`},
		{"empty log path", nil, map[string]string{"CLUSTER_NAME": "a", "LOG_OUTPUT_PATHS": "stdout,,/var/log/x"},
			`LOG_OUTPUT_PATHS (--log-output-paths) from env: an empty path in "stdout,,/var/log/x": give stdout, stderr or file paths, separated by commas`},
		{"lease name", nil, map[string]string{"CLUSTER_NAME": "a", "LEADER_ELECTION_NAME": "Karpenter_Lease"},
			`LEADER_ELECTION_NAME (--leader-election-name) from env: must be a Lease name (lower-case letters, digits, '-' and '.', starting and ending with a letter or digit, at most 253 characters), got "Karpenter_Lease"`},
		{"empty lease name", []string{"--leader-election-name="}, map[string]string{"CLUSTER_NAME": "a"},
			`LEADER_ELECTION_NAME (--leader-election-name) from flag: must be a Lease name (lower-case letters, digits, '-' and '.', starting and ending with a letter or digit, at most 253 characters), got ""`},
		{"lease namespace", nil, map[string]string{"CLUSTER_NAME": "a", "LEADER_ELECTION_NAMESPACE": "kube.system"},
			`LEADER_ELECTION_NAMESPACE (--leader-election-namespace) from env: must be a namespace name (lower-case letters, digits and '-', starting and ending with a letter or digit, at most 63 characters), got "kube.system"`},
		{"memory limit", nil, map[string]string{"CLUSTER_NAME": "a", "MEMORY_LIMIT": "160Mi"},
			`MEMORY_LIMIT (--memory-limit) from env: must be a number of bytes (e.g. 167772160 or 160MiB; -1 for none), got "160Mi"`},
		{"memory limit overflow", nil, map[string]string{"CLUSTER_NAME": "a", "MEMORY_LIMIT": "99999999999TiB"},
			`MEMORY_LIMIT (--memory-limit) from env: must be a number of bytes (e.g. 167772160 or 160MiB; -1 for none), got "99999999999TiB"`},
		{"cpu requests", nil, map[string]string{"CLUSTER_NAME": "a", "CPU_REQUESTS": "1.5"},
			`CPU_REQUESTS (--cpu-requests) from env: must be an integer number of millicores, got "1.5"`},
		{"scheduler config unknown field", nil, map[string]string{"CLUSTER_NAME": "a", "SCHEDULER_CONFIG": "podTopologySpreads: {}"},
			"SCHEDULER_CONFIG (--scheduler-config) from env: not a scheduler configuration: error unmarshaling JSON: while decoding JSON: json: unknown field \"podTopologySpreads\""},
		{"scheduler config default constraint with a selector", nil, map[string]string{"CLUSTER_NAME": "a", "SCHEDULER_CONFIG": "podTopologySpread:\n  defaultConstraints:\n  - maxSkew: 1\n    topologyKey: topology.kubernetes.io/zone\n    whenUnsatisfiable: ScheduleAnyway\n    labelSelector: {matchLabels: {app: a}}\n"},
			"SCHEDULER_CONFIG (--scheduler-config) from env: podTopologySpread.defaultConstraints[0]: labelSelector must not be set: the selector is deduced for each pod from the Services and controller selecting it"},
		{"scheduler config default constraint repeated", nil, map[string]string{"CLUSTER_NAME": "a", "SCHEDULER_CONFIG": "podTopologySpread:\n  defaultConstraints:\n  - {maxSkew: 1, topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: DoNotSchedule}\n  - {maxSkew: 2, topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: DoNotSchedule}\n"},
			"SCHEDULER_CONFIG (--scheduler-config) from env: podTopologySpread.defaultConstraints[1]: repeats [0] (topologyKey \"topology.kubernetes.io/zone\", whenUnsatisfiable DoNotSchedule)"},
		{"scheduler config default constraint skew", nil, map[string]string{"CLUSTER_NAME": "a", "SCHEDULER_CONFIG": "podTopologySpread:\n  defaultConstraints:\n  - {maxSkew: 0, topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: DoNotSchedule}\n"},
			"SCHEDULER_CONFIG (--scheduler-config) from env: podTopologySpread.defaultConstraints[0]: maxSkew 0 must be greater than 0"},
		{"scheduler config default constraint policy", nil, map[string]string{"CLUSTER_NAME": "a", "SCHEDULER_CONFIG": "podTopologySpread:\n  defaultConstraints:\n  - {maxSkew: 1, topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: Maybe}\n"},
			"SCHEDULER_CONFIG (--scheduler-config) from env: podTopologySpread.defaultConstraints[0]: whenUnsatisfiable \"Maybe\" must be DoNotSchedule or ScheduleAnyway"},
		{"bad gate value", nil, map[string]string{"CLUSTER_NAME": "a", "FEATURE_GATES": "SpotToSpotConsolidation=on"},
			`FEATURE_GATES (--feature-gates) from env: feature gate SpotToSpotConsolidation: value must be true or false, got "on"`},
		{"gate without value", nil, map[string]string{"CLUSTER_NAME": "a", "FEATURE_GATES": "NodeRepair"},
			`FEATURE_GATES (--feature-gates) from env: "NodeRepair" is not Name=true|false`},
		{"repair tolerations without the gate", nil, map[string]string{"CLUSTER_NAME": "a", "NODE_REPAIR_TOLERATIONS": "KernelReady=15s"},
			"NODE_REPAIR_TOLERATIONS (--node-repair-tolerations) has no effect unless FEATURE_GATES (--feature-gates) has NodeRepair=true"},
		{"repair toleration not a duration", []string{"--feature-gates=NodeRepair=true", "--node-repair-tolerations=KernelReady=soon"}, map[string]string{"CLUSTER_NAME": "a"},
			`NODE_REPAIR_TOLERATIONS (--node-repair-tolerations) from flag: condition KernelReady: toleration must be a positive duration such as 30s or 10m, got "soon"`},
		{"repair toleration zero", []string{"--feature-gates=NodeRepair=true", "--node-repair-tolerations=KernelReady=0s"}, map[string]string{"CLUSTER_NAME": "a"},
			`NODE_REPAIR_TOLERATIONS (--node-repair-tolerations) from flag: condition KernelReady: toleration must be a positive duration such as 30s or 10m, got "0s"`},
		{"repair toleration twice", []string{"--feature-gates=NodeRepair=true", "--node-repair-tolerations=Ready=1m,Ready=2m"}, map[string]string{"CLUSTER_NAME": "a"},
			`NODE_REPAIR_TOLERATIONS (--node-repair-tolerations) from flag: condition Ready is given twice`},
		{"repair toleration without a type", []string{"--feature-gates=NodeRepair=true", "--node-repair-tolerations=1m"}, map[string]string{"CLUSTER_NAME": "a"},
			`NODE_REPAIR_TOLERATIONS (--node-repair-tolerations) from flag: "1m" is not ConditionType=duration`},
		{"bad bool", nil, map[string]string{"CLUSTER_NAME": "a", "ISOLATED_VPC": "yes"},
			`ISOLATED_VPC (--isolated-vpc) from env: must be true or false, got "yes"`},
		{"qps not a number", []string{"--kube-client-qps=fast"}, map[string]string{"CLUSTER_NAME": "a"},
			`KUBE_CLIENT_QPS (--kube-client-qps) from flag: must be an integer, got "fast"`},
		{"burst below qps", nil, map[string]string{"CLUSTER_NAME": "a", "KUBE_CLIENT_BURST": "100"},
			"KUBE_CLIENT_BURST (--kube-client-burst) 100 must be at least KUBE_CLIENT_QPS (--kube-client-qps) 200"},
		{"negative enis", nil, map[string]string{"CLUSTER_NAME": "a", "RESERVED_ENIS": "-1"},
			"RESERVED_ENIS (--reserved-enis) from env: must be at least 0, got -1"},
		{"zero registration timeout", nil, map[string]string{"CLUSTER_NAME": "a", "REGISTRATION_TIMEOUT": "0s"},
			"REGISTRATION_TIMEOUT (--registration-timeout) from env: must be positive, got 0s"},
		{"bad endpoint", nil, map[string]string{"CLUSTER_NAME": "a", "CLUSTER_ENDPOINT": "api.example.com"},
			`CLUSTER_ENDPOINT (--cluster-endpoint) from env: must be an http(s) URL, got "api.example.com"`},
		{"unknown flag", []string{"--nope"}, map[string]string{"CLUSTER_NAME": "a"},
			"parsing flags: flag provided but not defined: -nope"},
		{"stray argument", []string{"extra"}, map[string]string{"CLUSTER_NAME": "a"}, `unexpected argument "extra"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse(tt.args, env(tt.env))
			if err == nil {
				t.Fatalf("Parse succeeded, want error %q", tt.want)
			}
			if diff := cmp.Diff(tt.want, err.Error()); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
		})
	}
}

func TestOptionsHaveDocs(t *testing.T) {
	seen := map[string]bool{}
	for _, o := range Options() {
		if o.Env == "" || o.Flag == "" || o.Usage == "" || o.apply == nil {
			t.Errorf("option %+v is incomplete", o)
		}
		if seen[o.Env] {
			t.Errorf("duplicate option %s", o.Env)
		}
		seen[o.Env] = true
	}
}

// TestFeatureGatesDoSomething: every accepted gate either turns its feature on, or, while the feature does not
// exist, refuses true with one line naming the gate; false is always accepted (a Karpenter configuration that
// names the gate keeps working).
func TestFeatureGatesDoSomething(t *testing.T) {
	type gateSet struct {
		env, flag string
		gates     []FeatureGate
		enabled   func(*Settings, string) bool
	}
	sets := []gateSet{
		{"FEATURE_GATES", "feature-gates", FeatureGates(), (*Settings).FeatureEnabled},
		{"AWS_FEATURE_GATES", "aws-feature-gates", AWSFeatureGates(), (*Settings).AWSFeatureEnabled},
	}
	for _, set := range sets {
		for _, g := range set.gates {
			t.Run(set.env+"/"+g.Name, func(t *testing.T) { checkGate(t, set.env, set.flag, g, set.enabled) })
		}
	}
}

func checkGate(t *testing.T, envName, flagName string, g FeatureGate, enabled func(*Settings, string) bool) {
	t.Helper()
	s, err := Parse(nil, env(map[string]string{"CLUSTER_NAME": "a", envName: g.Name + "=false"}))
	if err != nil {
		t.Fatalf("%s=false refused: %v", g.Name, err)
	}
	if enabled(s, g.Name) {
		t.Errorf("%s=false leaves the gate on", g.Name)
	}
	s, err = Parse(nil, env(map[string]string{"CLUSTER_NAME": "a", envName: g.Name + "=true"}))
	if g.Implemented {
		if err != nil {
			t.Fatalf("%s=true refused: %v", g.Name, err)
		}
		if !enabled(s, g.Name) {
			t.Errorf("%s=true leaves the gate off", g.Name)
		}
		return
	}
	want := envName + " (--" + flagName + ") from env: " + g.Name + "=true: the feature is not implemented yet in this version"
	if err == nil {
		t.Fatalf("%s=true accepted, want error %q", g.Name, want)
	}
	if !errors.Is(err, ErrFeatureNotImplemented) {
		t.Errorf("error %v does not wrap ErrFeatureNotImplemented", err)
	}
	if diff := cmp.Diff(want, err.Error()); diff != "" {
		t.Errorf("error (-want +got):\n%s", diff)
	}
}

// TestFeatureGateDefaults: Dovetail's defaults are Karpenter's, except that a gate Karpenter turns on by
// default is off here while its feature is not implemented (and the default itself must parse).
func TestFeatureGateDefaults(t *testing.T) {
	for _, g := range append(FeatureGates(), AWSFeatureGates()...) {
		want := g.KarpenterDefault && g.Implemented
		if g.Default != want {
			t.Errorf("%s: default %v, want %v (Karpenter's default %v, implemented %v)", g.Name, g.Default, want, g.KarpenterDefault, g.Implemented)
		}
	}
	var s Settings
	if err := applyFeatureGates(&s, defaultFeatureGatesString()); err != nil {
		t.Fatalf("the default FEATURE_GATES %q does not parse: %v", defaultFeatureGatesString(), err)
	}
	if err := applyAWSFeatureGates(&s, defaultAWSFeatureGatesString()); err != nil {
		t.Fatalf("the default AWS_FEATURE_GATES %q does not parse: %v", defaultAWSFeatureGatesString(), err)
	}
}

// The repair gates are accepted without node repair as a disruption method, as in Karpenter, with a warning.
func TestRepairGateWarnings(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		want []string
	}{
		{map[string]string{"FEATURE_GATES": "NodeRepair=true,TerminateFirstRepair=true", "AWS_FEATURE_GATES": "RebootForRepair=true"}, nil},
		{map[string]string{"AWS_FEATURE_GATES": "RebootForRepair=true"},
			[]string{"AWS_FEATURE_GATES RebootForRepair=true has no effect without FEATURE_GATES NodeRepair=true"}},
		{map[string]string{"FEATURE_GATES": "NodeRepair=true,TerminateFirstRepair=true", "LEGACY_NODE_REPAIR": "true"},
			[]string{"FEATURE_GATES TerminateFirstRepair=true has no effect with LEGACY_NODE_REPAIR=true (the legacy repair controller only replaces nodes)"}},
	} {
		tc.env["CLUSTER_NAME"] = "a"
		s, err := Parse(nil, func(k string) string { return tc.env[k] })
		if err != nil {
			t.Fatalf("%v: %v", tc.env, err)
		}
		if d := cmp.Diff(tc.want, s.Warnings); d != "" {
			t.Errorf("%v: warnings (-want +got):\n%s", tc.env, d)
		}
	}
}
