package settings

import (
	"flag"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Option describes one setting: its environment variable, flag, default and meaning. Options lists them all; the
// documentation in docs/settings.md is written from the same table.
type Option struct {
	Env     string
	Flag    string
	Default string
	Usage   string
	// Bool marks a flag that may be given without a value (--isolated-vpc).
	Bool     bool
	Required bool
	apply    func(s *Settings, v string) error
}

// Options returns the table of every setting, in documentation order.
func Options() []Option {
	return []Option{
		{Env: "CLUSTER_NAME", Flag: "cluster-name", Required: true,
			Usage: "Name of the Kubernetes cluster; tags and discovers every AWS resource Dovetail manages.",
			apply: func(s *Settings, v string) error { s.ClusterName = v; return nil }},
		{Env: "CLUSTER_ENDPOINT", Flag: "cluster-endpoint",
			Usage: "API server URL new nodes join. Empty: discovered with EKS DescribeCluster.",
			apply: func(s *Settings, v string) error {
				if v != "" {
					u, err := url.Parse(v)
					if err != nil || u.Scheme != "https" && u.Scheme != "http" || u.Host == "" {
						return fmt.Errorf("must be an http(s) URL, got %q", v)
					}
				}
				s.ClusterEndpoint = v
				return nil
			}},
		{Env: "CLUSTER_CA_BUNDLE", Flag: "cluster-ca-bundle",
			Usage: "Base64 PEM certificate authority nodes trust for the API server. Empty: taken from the controller's own client configuration.",
			apply: func(s *Settings, v string) error { s.ClusterCABundle = v; return nil }},
		{Env: "INTERRUPTION_QUEUE", Flag: "interruption-queue",
			Usage: "Name of the SQS queue fed by EventBridge interruption rules. Empty: interruption handling is off.",
			apply: func(s *Settings, v string) error { s.InterruptionQueue = v; return nil }},
		{Env: "ISOLATED_VPC", Flag: "isolated-vpc", Default: "false", Bool: true,
			Usage: "The VPC has no internet access: do not call public-only AWS endpoints (Pricing); use built-in prices.",
			apply: boolInto(func(s *Settings) *bool { return &s.IsolatedVPC })},
		{Env: "VM_MEMORY_OVERHEAD_PERCENT", Flag: "vm-memory-overhead-percent", Default: "0.075",
			Usage: "Share of an instance type's memory held back for the hypervisor and OS, in [0, 1).",
			apply: func(s *Settings, v string) error {
				f, err := strconv.ParseFloat(v, 64)
				if err != nil {
					return fmt.Errorf("must be a number, got %q", v)
				}
				if f < 0 || f >= 1 {
					return fmt.Errorf("must be in [0, 1), got %v", f)
				}
				s.VMMemoryOverheadPercent = f
				return nil
			}},
		{Env: "RESERVED_ENIS", Flag: "reserved-enis", Default: "0",
			Usage: "Number of network interfaces left out when computing max pods per node.",
			apply: intInto(0, func(s *Settings) *int { return &s.ReservedENIs })},
		{Env: "BATCH_IDLE_DURATION", Flag: "batch-idle-duration", Default: "1s",
			Usage: "A provisioning batch closes when no new pending pod arrived for this long.",
			apply: durationInto(func(s *Settings) *time.Duration { return &s.BatchIdleDuration })},
		{Env: "BATCH_MAX_DURATION", Flag: "batch-max-duration", Default: "10s",
			Usage: "A provisioning batch closes at this age at the latest, even while pods keep arriving.",
			apply: durationInto(func(s *Settings) *time.Duration { return &s.BatchMaxDuration })},
		{Env: "REGISTRATION_TIMEOUT", Flag: "registration-timeout", Default: "15m",
			Usage: "A launched NodeClaim whose Node has not joined the cluster after this long is deleted and its instance terminated.",
			apply: durationInto(func(s *Settings) *time.Duration { return &s.RegistrationTimeout })},
		{Env: "FEATURE_GATES", Flag: "feature-gates",
			Default: defaultFeatureGatesString(),
			Usage:   "Comma-separated Name=true|false pairs turning optional features on or off; unknown names, and true for a feature not implemented yet, are rejected.",
			apply:   applyFeatureGates},
		{Env: "NODE_REPAIR_TOLERATIONS", Flag: "node-repair-tolerations",
			Usage: "Comma-separated ConditionType=duration pairs replacing the cloud provider's toleration of a node condition before node repair (e.g. KernelReady=1m); needs FEATURE_GATES NodeRepair=true. Empty: the provider's tolerations.",
			apply: applyNodeRepairTolerations},
		{Env: "LOG_LEVEL", Flag: "log-level", Default: "info",
			Usage: "Log verbosity: debug, info, warn or error.",
			apply: func(s *Settings, v string) error {
				switch v {
				case "debug", "info", "warn", "error":
					s.LogLevel = v
					return nil
				}
				return fmt.Errorf("must be one of debug, info, warn, error, got %q", v)
			}},
		{Env: "METRICS_PORT", Flag: "metrics-port", Default: "8080",
			Usage: "Port of the Prometheus /metrics endpoint.",
			apply: portInto(func(s *Settings) *int { return &s.MetricsPort })},
		{Env: "HEALTH_PROBE_PORT", Flag: "health-probe-port", Default: "8081",
			Usage: "Port of the /healthz and /readyz endpoints.",
			apply: portInto(func(s *Settings) *int { return &s.HealthProbePort })},
		{Env: "KUBE_CLIENT_QPS", Flag: "kube-client-qps", Default: "200",
			Usage: "Sustained queries per second to the API server.",
			apply: intInto(1, func(s *Settings) *int { return &s.KubeClientQPS })},
		{Env: "KUBE_CLIENT_BURST", Flag: "kube-client-burst", Default: "300",
			Usage: "Burst of queries allowed above KUBE_CLIENT_QPS.",
			apply: intInto(1, func(s *Settings) *int { return &s.KubeClientBurst })},
		{Env: "ENABLE_PROFILING", Flag: "enable-profiling", Default: "false", Bool: true,
			Usage: "Serve Go pprof handlers under /debug/pprof on the metrics port.",
			apply: boolInto(func(s *Settings) *bool { return &s.EnableProfiling })},
		{Env: "DISABLE_LEADER_ELECTION", Flag: "disable-leader-election", Default: "false", Bool: true,
			Usage: "Run the controllers without taking the leader lease (only for a single replica).",
			apply: boolInto(func(s *Settings) *bool { return &s.DisableLeaderElection })},
		{Env: "LEADER_ELECTION_NAME", Flag: "leader-election-name", Default: "karpenter-leader-election",
			Usage: "Name of the leader-election Lease. Karpenter's name by default: while Karpenter holds it, Dovetail waits.",
			apply: func(s *Settings, v string) error { s.LeaderElectionName = v; return nil }},
		{Env: "LEADER_ELECTION_NAMESPACE", Flag: "leader-election-namespace",
			Usage: "Namespace of the leader-election Lease. Empty: the controller's own namespace (POD_NAMESPACE).",
			apply: func(s *Settings, v string) error { s.LeaderElectionNamespace = v; return nil }},
		{Env: "PREFERENCE_POLICY", Flag: "preference-policy", Default: PreferencePolicyRespect,
			Usage: "Respect: honour preferred affinities, relaxing them one at a time when they cannot be met. Ignore: schedule as if they were absent.",
			apply: enumInto(func(s *Settings) *string { return &s.PreferencePolicy }, PreferencePolicyRespect, PreferencePolicyIgnore)},
		{Env: "MIN_VALUES_POLICY", Flag: "min-values-policy", Default: MinValuesPolicyStrict,
			Usage: "Strict: a NodeClaim must satisfy every minValues or is not created. BestEffort: minValues are relaxed when they cannot be met.",
			apply: enumInto(func(s *Settings) *string { return &s.MinValuesPolicy }, MinValuesPolicyStrict, MinValuesPolicyBestEffort)},
	}
}

// Parse reads settings from args (flags, without the program name) and, for every flag not given, from the
// environment through getenv, then the default. It returns an error naming the offending setting, e.g.
// "CLUSTER_NAME (--cluster-name) is required".
func Parse(args []string, getenv func(string) string) (*Settings, error) {
	opts := Options()
	fs := flag.NewFlagSet("dovetail", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	given := map[string]*flagValue{}
	for _, o := range opts {
		v := &flagValue{isBool: o.Bool}
		given[o.Flag] = v
		fs.Var(v, o.Flag, o.Usage)
	}
	if err := fs.Parse(args); err != nil {
		return nil, fmt.Errorf("parsing flags: %w", err)
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	s := &Settings{}
	for _, o := range opts {
		value, source := o.Default, ""
		if fv := given[o.Flag]; fv.set {
			value, source = fv.value, "flag"
		} else if ev := strings.TrimSpace(getenv(o.Env)); ev != "" {
			value, source = ev, "env"
		}
		if o.Required && value == "" {
			return nil, fmt.Errorf("%s (--%s) is required", o.Env, o.Flag)
		}
		if err := o.apply(s, value); err != nil {
			if source == "" {
				source = "default"
			}
			return nil, fmt.Errorf("%s (--%s) from %s: %w", o.Env, o.Flag, source, err)
		}
	}
	if s.BatchIdleDuration > s.BatchMaxDuration {
		return nil, fmt.Errorf("BATCH_IDLE_DURATION (--batch-idle-duration) %s must not exceed BATCH_MAX_DURATION (--batch-max-duration) %s",
			s.BatchIdleDuration, s.BatchMaxDuration)
	}
	if len(s.NodeRepairTolerations) > 0 && !s.FeatureEnabled(FeatureNodeRepair) {
		return nil, fmt.Errorf("NODE_REPAIR_TOLERATIONS (--node-repair-tolerations) has no effect unless FEATURE_GATES (--feature-gates) has %s=true", FeatureNodeRepair)
	}
	if s.MetricsPort == s.HealthProbePort {
		return nil, fmt.Errorf("METRICS_PORT (--metrics-port) and HEALTH_PROBE_PORT (--health-probe-port) must differ, both are %d", s.MetricsPort)
	}
	if s.KubeClientBurst < s.KubeClientQPS {
		return nil, fmt.Errorf("KUBE_CLIENT_BURST (--kube-client-burst) %d must be at least KUBE_CLIENT_QPS (--kube-client-qps) %d",
			s.KubeClientBurst, s.KubeClientQPS)
	}
	return s, nil
}

// flagValue records whether a flag was given and its raw text.
type flagValue struct {
	value  string
	set    bool
	isBool bool
}

func (f *flagValue) String() string { return f.value }
func (f *flagValue) Set(v string) error {
	f.value, f.set = v, true
	return nil
}
func (f *flagValue) IsBoolFlag() bool { return f.isBool }

func boolInto(field func(*Settings) *bool) func(*Settings, string) error {
	return func(s *Settings, v string) error {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("must be true or false, got %q", v)
		}
		*field(s) = b
		return nil
	}
}

func intInto(min int, field func(*Settings) *int) func(*Settings, string) error {
	return func(s *Settings, v string) error {
		n, err := strconv.Atoi(v)
		if err != nil {
			return fmt.Errorf("must be an integer, got %q", v)
		}
		if n < min {
			return fmt.Errorf("must be at least %d, got %d", min, n)
		}
		*field(s) = n
		return nil
	}
}

func portInto(field func(*Settings) *int) func(*Settings, string) error {
	return func(s *Settings, v string) error {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 65535 {
			return fmt.Errorf("must be a port number in 1..65535, got %q", v)
		}
		*field(s) = n
		return nil
	}
}

func durationInto(field func(*Settings) *time.Duration) func(*Settings, string) error {
	return func(s *Settings, v string) error {
		d, err := time.ParseDuration(v)
		if err != nil {
			return fmt.Errorf("must be a duration such as 1s or 500ms, got %q", v)
		}
		if d <= 0 {
			return fmt.Errorf("must be positive, got %s", d)
		}
		*field(s) = d
		return nil
	}
}

func enumInto(field func(*Settings) *string, allowed ...string) func(*Settings, string) error {
	return func(s *Settings, v string) error {
		for _, a := range allowed {
			if v == a {
				*field(s) = v
				return nil
			}
		}
		return fmt.Errorf("must be one of %s, got %q", strings.Join(allowed, ", "), v)
	}
}

// applyNodeRepairTolerations reads ConditionType=duration pairs; a condition type named twice is an error.
func applyNodeRepairTolerations(s *Settings, v string) error {
	out := map[string]time.Duration{}
	for _, pair := range strings.Split(v, ",") {
		pair = strings.TrimSpace(pair)
		if pair == "" {
			continue
		}
		name, val, ok := strings.Cut(pair, "=")
		name = strings.TrimSpace(name)
		if !ok || name == "" {
			return fmt.Errorf("%q is not ConditionType=duration", pair)
		}
		if _, dup := out[name]; dup {
			return fmt.Errorf("condition %s is given twice", name)
		}
		d, err := time.ParseDuration(strings.TrimSpace(val))
		if err != nil || d <= 0 {
			return fmt.Errorf("condition %s: toleration must be a positive duration such as 30s or 10m, got %q", name, val)
		}
		out[name] = d
	}
	if len(out) > 0 {
		s.NodeRepairTolerations = out
	}
	return nil
}
