package settings

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
)

// Option describes one setting: its environment variable, flag, default and meaning. Options lists them all;
// hack/docgen writes docs/reference/settings.md from the same table.
type Option struct {
	Env     string
	Flag    string
	Default string
	Usage   string
	// Doc is the meaning written in the settings reference (Markdown); Usage is the flag's one-line help.
	Doc string
	// Karpenter says whether the setting behaves as in Karpenter ("same") or how it differs (Markdown).
	Karpenter string
	// Since is the first Karpenter minor version with this setting ("v1.14" for every setting v1.14 has); empty
	// for a setting of Dovetail's own.
	Since string
	// Bool marks a flag that may be given without a value (--isolated-vpc).
	Bool     bool
	Required bool
	apply    func(s *Settings, v string) error
}

// Options returns the table of every setting, in documentation order: Karpenter's AWS provider settings, then
// Karpenter's core settings, then Dovetail's own.
func Options() []Option {
	return []Option{
		// Karpenter's AWS provider (github.com/aws/karpenter-provider-aws pkg/operator/options).
		{Env: "CLUSTER_NAME", Flag: "cluster-name", Required: true, Since: "v1.14",
			Doc:       "Name of the Kubernetes cluster; tags and discovers every AWS resource Dovetail manages.",
			Karpenter: "same",
			Usage:     "Name of the Kubernetes cluster; tags and discovers every AWS resource Dovetail manages.",
			apply:     func(s *Settings, v string) error { s.ClusterName = v; return nil }},
		{Env: "CLUSTER_ENDPOINT", Flag: "cluster-endpoint", Since: "v1.14",
			Doc:       "API server URL new nodes join. Empty: discovered with EKS DescribeCluster.",
			Karpenter: "same; must be an `http`/`https` URL (Karpenter takes any absolute URL)",
			Usage:     "API server URL new nodes join. Empty: discovered with EKS DescribeCluster.",
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
		{Env: "CLUSTER_CA_BUNDLE", Flag: "cluster-ca-bundle", Since: "v1.14",
			Doc:       "Base64 PEM certificate authority nodes trust for the API server. Empty: taken from the controller's own client configuration.",
			Karpenter: "same",
			Usage:     "Base64 PEM certificate authority nodes trust for the API server. Empty: taken from the controller's own client configuration.",
			apply:     func(s *Settings, v string) error { s.ClusterCABundle = v; return nil }},
		{Env: "INTERRUPTION_QUEUE", Flag: "interruption-queue", Since: "v1.14",
			Doc:       "Name of the SQS queue fed by EventBridge interruption rules (spot interruption warnings, rebalance recommendations, instance state changes, AWS Health scheduled changes). Empty: interruption handling is off. Per-NodePool policy and queue setup: [interruption.md](interruption.md).",
			Karpenter: "same",
			Usage:     "Name of the SQS queue fed by EventBridge interruption rules. Empty: interruption handling is off.",
			apply:     func(s *Settings, v string) error { s.InterruptionQueue = v; return nil }},
		{Env: "ISOLATED_VPC", Flag: "isolated-vpc", Default: "false", Bool: true, Since: "v1.14",
			Doc:       "The VPC has no internet access: do not call public-only AWS endpoints (Pricing); use built-in prices.",
			Karpenter: "same",
			Usage:     "The VPC has no internet access: do not call public-only AWS endpoints (Pricing); use built-in prices.",
			apply:     boolInto(func(s *Settings) *bool { return &s.IsolatedVPC })},
		{Env: "EKS_CONTROL_PLANE", Flag: "eks-control-plane", Default: "false", Bool: true, Since: "v1.14",
			Doc:       "The cluster runs an EKS control plane: its Kubernetes version is read from EKS DescribeCluster every 5 minutes instead of from the API server's `/version`. Either way a control-plane upgrade reaches AMI aliases (and so drift) without a restart.",
			Karpenter: "same",
			Usage:     "The cluster runs an EKS control plane: its Kubernetes version is read from EKS DescribeCluster (every 5 minutes) instead of the API server's discovery.",
			apply:     boolInto(func(s *Settings) *bool { return &s.EKSControlPlane })},
		{Env: "VM_MEMORY_OVERHEAD_PERCENT", Flag: "vm-memory-overhead-percent", Default: "0.075", Since: "v1.14",
			Doc:       "Share of an instance type's memory held back for the hypervisor and OS, in [0, 1): the estimate used until a node of the type registers; then the memory that node reports is used for the type with the same EC2NodeClass AMIs ([aws-provider](aws-provider.md#learned-memory)).",
			Karpenter: "same; values of 1 or more (no memory left) are refused, Karpenter takes any value ≥ 0",
			Usage:     "Share of an instance type's memory held back for the hypervisor and OS, in [0, 1).",
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
		{Env: "RESERVED_ENIS", Flag: "reserved-enis", Default: "0", Since: "v1.14",
			Doc:       "Number of network interfaces left out when computing max pods per node.",
			Karpenter: "same",
			Usage:     "Number of network interfaces left out when computing max pods per node.",
			apply:     intInto(0, func(s *Settings) *int { return &s.ReservedENIs })},
		{Env: "DISABLE_DRY_RUN", Flag: "disable-dry-run", Default: "false", Bool: true, Since: "v1.14",
			Doc:       "Skip the dry-run validation of EC2NodeClasses: by default a node class is Ready only once its launch template could be created and dry-run CreateFleet and RunInstances calls were allowed (refusals show as `ValidationSucceeded=False`, reasons `CreateLaunchTemplateAuthCheckFailed`, `CreateFleetAuthCheckFailed`, `RunInstancesAuthCheckFailed`); `true` skips the dry runs.",
			Karpenter: "same",
			Usage:     "Skip the dry-run CreateFleet and RunInstances validation of EC2NodeClasses.",
			apply:     boolInto(func(s *Settings) *bool { return &s.DisableDryRun })},
		{Env: "ENABLE_ZONAL_SHIFT", Flag: "enable-zonal-shift", Default: "false", Bool: true, Since: "v1.14",
			Doc:       "Follow the cluster's ARC zonal shifts: at startup the cluster's ARN is read with EKS `DescribeCluster` and ARC `GetManagedResource` must know it (otherwise the controller refuses to start); every 30 s the applied, unexpired zonal shifts are read again, offerings in a zone traffic is shifted away from are unavailable, instances there are not terminated until the shift ends, and NodePools that launch into the zone get the events `ZonalShiftActive` / `ZonalShiftCleared`. Needs `eks:DescribeCluster` and `arc-zonal-shift:GetManagedResource`.",
			Karpenter: "same; small differences (a cancelled shift, calls for instances in the zone) in aws-provider.md",
			Usage:     "Follow the cluster's ARC zonal shifts: no launches into a zone traffic is shifted away from.",
			apply:     boolInto(func(s *Settings) *bool { return &s.EnableZonalShift })},
		{Env: "AMI_REFRESH_INTERVAL", Flag: "ami-refresh-interval", Default: "1m", Since: "v1.14",
			Doc:       "How often an EC2NodeClass's AMIs are resolved again (DescribeImages, SSM parameters); at least `1m`.",
			Karpenter: "same: the EC2NodeClass status controller resolves AMIs on this interval (a spec change resolves at once)",
			Usage:     "How often an EC2NodeClass's AMIs are resolved again (DescribeImages, SSM); at least 1m.",
			apply:     refreshInto(func(s *Settings) *time.Duration { return &s.AMIRefreshInterval })},
		{Env: "SUBNET_REFRESH_INTERVAL", Flag: "subnet-refresh-interval", Default: "1m", Since: "v1.14",
			Doc:       "How often an EC2NodeClass's subnets are resolved again (DescribeSubnets); at least `1m`.",
			Karpenter: "same",
			Usage:     "How often an EC2NodeClass's subnets are resolved again (DescribeSubnets); at least 1m.",
			apply:     refreshInto(func(s *Settings) *time.Duration { return &s.SubnetRefreshInterval })},
		{Env: "SECURITY_GROUP_REFRESH_INTERVAL", Flag: "security-group-refresh-interval", Default: "1m", Since: "v1.15",
			Doc:       "How often an EC2NodeClass's security groups are resolved again (DescribeSecurityGroups); at least `1m`.",
			Karpenter: "same (Karpenter v1.15)",
			Usage:     "How often an EC2NodeClass's security groups are resolved again (DescribeSecurityGroups); at least 1m.",
			apply:     refreshInto(func(s *Settings) *time.Duration { return &s.SecurityGroupRefreshInterval })},
		{Env: "AWS_FEATURE_GATES", Flag: "aws-feature-gates", Default: defaultAWSFeatureGatesString(), Since: "v1.15",
			Doc:       "The AWS provider's feature gates (below).",
			Karpenter: "Karpenter v1.15; every gate accepted off, `true` refused (features not in Dovetail yet); unknown names refused (Karpenter ignores them)",
			Usage:     "Comma-separated Name=true|false pairs for the AWS provider's optional features; unknown names, and true for a feature not implemented yet, are rejected.",
			apply:     applyAWSFeatureGates},

		// Karpenter's core (sigs.k8s.io/karpenter pkg/operator/options).
		{Env: "KARPENTER_SERVICE", Flag: "karpenter-service", Since: "v1.14",
			Doc:       "Name of the controller's Service.",
			Karpenter: "same: read and used for nothing (it named the Service of webhooks neither serves)",
			Usage:     "Name of the controller's Service. Read and unused, as in Karpenter (it served webhooks once).",
			apply:     func(s *Settings, v string) error { s.KarpenterService = v; return nil }},
		{Env: "BATCH_IDLE_DURATION", Flag: "batch-idle-duration", Default: "1s", Since: "v1.14",
			Doc:       "A provisioning batch closes when no new pending pod arrived for this long.",
			Karpenter: "same; must be positive and at most `BATCH_MAX_DURATION`",
			Usage:     "A provisioning batch closes when no new pending pod arrived for this long.",
			apply:     durationInto(func(s *Settings) *time.Duration { return &s.BatchIdleDuration })},
		{Env: "BATCH_MAX_DURATION", Flag: "batch-max-duration", Default: "10s", Since: "v1.14",
			Doc:       "A provisioning batch closes at this age at the latest, even while pods keep arriving.",
			Karpenter: "same; must be positive",
			Usage:     "A provisioning batch closes at this age at the latest, even while pods keep arriving.",
			apply:     durationInto(func(s *Settings) *time.Duration { return &s.BatchMaxDuration })},
		{Env: "FEATURE_GATES", Flag: "feature-gates", Default: defaultFeatureGatesString(), Since: "v1.14",
			Doc:       "Comma-separated Name=true\\|false pairs turning optional features on or off (below).",
			Karpenter: "Karpenter v1.15's default string; unknown names refused (Karpenter ignores them); removed gates accepted with a warning",
			Usage:     "Comma-separated Name=true|false pairs turning optional features on or off; unknown names, and true for a feature not implemented yet, are rejected; gates Karpenter removed are accepted with a warning.",
			apply:     applyFeatureGates},
		{Env: "LOG_LEVEL", Flag: "log-level", Default: "info", Since: "v1.14",
			Doc:       "Log verbosity: `debug`, `info`, `warn` or `error`; empty means `info`.",
			Karpenter: "same, and `warn` is also accepted",
			Usage:     "Log verbosity: debug, info, warn or error (empty: info).",
			apply: func(s *Settings, v string) error {
				switch v {
				case "":
					s.LogLevel = "info"
					return nil
				case "debug", "info", "warn", "error":
					s.LogLevel = v
					return nil
				}
				return fmt.Errorf("must be one of debug, info, warn, error, got %q", v)
			}},
		{Env: "LOG_OUTPUT_PATHS", Flag: "log-output-paths", Default: "stdout", Since: "v1.14",
			Doc:       "Comma-separated places the logs go: `stdout`, `stderr` or file paths (appended to, created if missing).",
			Karpenter: "same",
			Usage:     "Comma-separated places the logs go: stdout, stderr or file paths.",
			apply:     pathsInto(func(s *Settings) *[]string { return &s.LogOutputPaths })},
		{Env: "LOG_ERROR_OUTPUT_PATHS", Flag: "log-error-output-paths", Default: "stderr", Since: "v1.14",
			Doc:       "Comma-separated places the logger's own errors go (a log line it could not write).",
			Karpenter: "same",
			Usage:     "Comma-separated places the logger's own errors (a log line it could not write) go: stdout, stderr or file paths.",
			apply:     pathsInto(func(s *Settings) *[]string { return &s.LogErrorOutputPaths })},
		{Env: "METRICS_PORT", Flag: "metrics-port", Default: "8080", Since: "v1.14",
			Doc:       "Port of the Prometheus /metrics endpoint.",
			Karpenter: "same; must be a port (1–65535) other than `HEALTH_PROBE_PORT`",
			Usage:     "Port of the Prometheus /metrics endpoint.",
			apply:     portInto(func(s *Settings) *int { return &s.MetricsPort })},
		{Env: "HEALTH_PROBE_PORT", Flag: "health-probe-port", Default: "8081", Since: "v1.14",
			Doc:       "Port of the /healthz and /readyz endpoints.",
			Karpenter: "same; must be a port",
			Usage:     "Port of the /healthz and /readyz endpoints.",
			apply:     portInto(func(s *Settings) *int { return &s.HealthProbePort })},
		{Env: "KUBE_CLIENT_QPS", Flag: "kube-client-qps", Default: "200", Since: "v1.14",
			Doc:       "Sustained queries per second to the API server.",
			Karpenter: "same; at least 1",
			Usage:     "Sustained queries per second to the API server.",
			apply:     intInto(1, func(s *Settings) *int { return &s.KubeClientQPS })},
		{Env: "KUBE_CLIENT_BURST", Flag: "kube-client-burst", Default: "300", Since: "v1.14",
			Doc:       "Burst of queries allowed above KUBE_CLIENT_QPS.",
			Karpenter: "same; at least `KUBE_CLIENT_QPS`",
			Usage:     "Burst of queries allowed above KUBE_CLIENT_QPS.",
			apply:     intInto(1, func(s *Settings) *int { return &s.KubeClientBurst })},
		{Env: "ENABLE_PROFILING", Flag: "enable-profiling", Default: "false", Bool: true, Since: "v1.14",
			Doc:       "Serve Go pprof handlers under /debug/pprof on the metrics port.",
			Karpenter: "same",
			Usage:     "Serve Go pprof handlers under /debug/pprof on the metrics port.",
			apply:     boolInto(func(s *Settings) *bool { return &s.EnableProfiling })},
		{Env: "DISABLE_CONTROLLER_WARMUP", Flag: "disable-controller-warmup", Default: "true", Bool: true, Since: "v1.14",
			Doc:       "`false`: with leader election on, a replica waiting for the lease already starts its controllers' watches and fills its caches, so it takes over faster.",
			Karpenter: "same (controller-runtime's controller warm-up)",
			Usage:     "false: with leader election on, a replica waiting for the lease starts its watches and fills its caches already, so it takes over faster.",
			apply:     boolInto(func(s *Settings) *bool { return &s.DisableControllerWarmup })},
		{Env: "DISABLE_LEADER_ELECTION", Flag: "disable-leader-election", Default: "false", Bool: true, Since: "v1.14",
			Doc:       "Run the controllers without taking the leader lease (only for a single replica).",
			Karpenter: "same",
			Usage:     "Run the controllers without taking the leader lease (only for a single replica).",
			apply:     boolInto(func(s *Settings) *bool { return &s.DisableLeaderElection })},
		{Env: "DISABLE_CLUSTER_STATE_OBSERVABILITY", Flag: "disable-cluster-state-observability", Default: "false", Bool: true, Since: "v1.14",
			Doc:       "Turn off the cluster-state metrics (pods, nodes, NodePools) and status-condition metrics and events.",
			Karpenter: "only `false` is accepted: Dovetail cannot turn these off yet (`true` is refused at startup)",
			Usage:     "Turn off the cluster-state metrics and status-condition events. Only false is accepted: Dovetail cannot turn them off yet.",
			apply: onlyBool(false, func(s *Settings) *bool { return &s.DisableClusterStateObservability },
				"true is not supported yet: Dovetail's cluster-state metrics and condition events cannot be turned off")},
		{Env: "LEADER_ELECTION_NAME", Flag: "leader-election-name", Default: DefaultLeaderElectionName, Since: "v1.14",
			Doc:       "Name of the leader-election Lease.",
			Karpenter: "same default; must be a valid Lease name (Karpenter fails later, when it creates the Lease)",
			Usage:     "Name of the leader-election Lease.",
			apply: func(s *Settings, v string) error {
				if len(validation.IsDNS1123Subdomain(v)) > 0 {
					return fmt.Errorf("must be a Lease name (lower-case letters, digits, '-' and '.', starting and ending with a letter or digit, at most 253 characters), got %q", v)
				}
				s.LeaderElectionName = v
				return nil
			}},
		{Env: "LEADER_ELECTION_NAMESPACE", Flag: "leader-election-namespace", Since: "v1.14",
			Doc:       "Namespace of the leader-election Lease. Empty: the controller's own namespace.",
			Karpenter: "same; must be a valid namespace name",
			Usage:     "Namespace of the leader-election Lease. Empty: the controller's own namespace.",
			apply: func(s *Settings, v string) error {
				if v != "" {
					if len(validation.IsDNS1123Label(v)) > 0 {
						return fmt.Errorf("must be a namespace name (lower-case letters, digits and '-', starting and ending with a letter or digit, at most 63 characters), got %q", v)
					}
				}
				s.LeaderElectionNamespace = v
				return nil
			}},
		{Env: "MEMORY_LIMIT", Flag: "memory-limit", Default: "-1", Since: "v1.14",
			Doc:       "The container's memory limit in bytes (the downward API's `limits.memory`); zero or less: none. The Go runtime's soft memory limit is set below it (see below).",
			Karpenter: "same input (also takes a `KiB`/`MiB`/`GiB`/`TiB` suffix); the soft limit is the limit less a tenth, at least 44 MiB, never below half (Karpenter: 90% of it)",
			Usage:     "The container's memory limit in bytes (or with a B/KiB/MiB/GiB/TiB suffix); the Go runtime's soft memory limit is set below it. Zero or less: none.",
			apply:     applyMemoryLimit},
		{Env: "CPU_REQUESTS", Flag: "cpu-requests", Default: "1000", Since: "v1.14",
			Doc:       "The container's CPU request in millicores (the downward API's `requests.cpu` with divisor `1m`); zero or less reads as `1000`.",
			Karpenter: "same input; Karpenter scales its controllers' concurrent reconciles with it, Dovetail (whose worker counts are fixed) sizes GOMAXPROCS to it: the request in cores rounded up, at least 2, when lower than the runtime's own choice and `GOMAXPROCS` is not set",
			Usage:     "The container's CPU request in millicores (zero or less: 1000); GOMAXPROCS is sized from it.",
			apply: func(s *Settings, v string) error {
				n, err := strconv.ParseInt(v, 10, 64)
				if err != nil {
					return fmt.Errorf("must be an integer number of millicores, got %q", v)
				}
				if n <= 0 {
					n = 1000
				}
				s.CPURequests = n
				return nil
			}},
		{Env: "PREFERENCE_POLICY", Flag: "preference-policy", Default: PreferencePolicyRespect, Since: "v1.14",
			Doc:       "Respect: honour preferred affinities, relaxing them one at a time when they cannot be met. Ignore: schedule as if they were absent.",
			Karpenter: "same",
			Usage:     "Respect: honour preferred affinities, relaxing them one at a time when they cannot be met. Ignore: schedule as if they were absent.",
			apply:     enumInto(func(s *Settings) *string { return &s.PreferencePolicy }, PreferencePolicyRespect, PreferencePolicyIgnore)},
		{Env: "MIN_VALUES_POLICY", Flag: "min-values-policy", Default: MinValuesPolicyStrict, Since: "v1.14",
			Doc:       "Strict: a NodeClaim must satisfy every minValues or is not created. BestEffort: minValues are relaxed when they cannot be met.",
			Karpenter: "same",
			Usage:     "Strict: a NodeClaim must satisfy every minValues or is not created. BestEffort: minValues are relaxed when they cannot be met.",
			apply:     enumInto(func(s *Settings) *string { return &s.MinValuesPolicy }, MinValuesPolicyStrict, MinValuesPolicyBestEffort)},
		{Env: "IGNORE_DRA_REQUESTS", Flag: "ignore-dra-requests", Default: "true", Bool: true, Since: "v1.14",
			Doc:       "`true`: pods with dynamic resource allocation claims (`spec.resourceClaims`, or a container's `resources.claims`) are not provisioned for; each gets a `FailedScheduling` event saying so. `false`: their ResourceClaims count when planning: a new node's instance type must carry devices that satisfy them (device models: AWS_FEATURE_GATES `DRANVIDIAGPU`, `DRAEFA` and the `dovetail-dra-device-models` ConfigMap), an existing node must have them free ([DRA](dra.md)).",
			Karpenter: "same",
			Usage:     "true: pods with dynamic resource allocation claims are not provisioned for (each gets a FailedScheduling event saying so). false: their ResourceClaims count when planning, against the instance types' device models and the existing nodes' ResourceSlices.",
			apply:     boolInto(func(s *Settings) *bool { return &s.IgnoreDRARequests })},
		{Env: "LEGACY_NODE_REPAIR", Flag: "legacy-node-repair", Default: "false", Bool: true, Since: "v1.15",
			Doc:       "Karpenter v1.15: with `NodeRepair`, run the legacy node repair controller instead of repair as a disruption method.",
			Karpenter: "same ([repair](repair.md))",
			Usage:     "With the NodeRepair feature gate, run the legacy node repair controller (force-terminates unhealthy nodes) instead of node repair as a disruption method (replacement first, within the Unhealthy budgets).",
			apply:     boolInto(func(s *Settings) *bool { return &s.LegacyNodeRepair })},
		{Env: "SCHEDULER_CONFIG", Flag: "scheduler-config", Since: "v1.15",
			Doc:       "Karpenter v1.15: YAML or JSON with the kube-scheduler behaviour the scheduling simulation mirrors (`podTopologySpread.defaultConstraints`).",
			Karpenter: "same document and checks (unknown fields, a `labelSelector` or `matchLabelKeys`, repeated key and policy refused); the default constraints go to pods without their own, with the selector the kube-scheduler deduces from the Services, ReplicaSet, StatefulSet or ReplicationController selecting the pod ([scheduling](scheduling.md#default-topology-spread))",
			Usage:     "YAML or JSON with the kube-scheduler behaviour to mirror: podTopologySpread.defaultConstraints, given to pods without topology spread constraints of their own, with selectors deduced as the kube-scheduler deduces them.",
			apply:     applySchedulerConfig},

		// Dovetail's own.
		{Env: "REGISTRATION_TIMEOUT", Flag: "registration-timeout", Default: "15m",
			Doc:       "A launched NodeClaim whose Node has not joined the cluster after this long is deleted and its instance terminated (event `RegistrationTimeout` on the NodeClaim).",
			Karpenter: "Dovetail's own; Karpenter's timeout is fixed at 15 minutes",
			Usage:     "A launched NodeClaim whose Node has not joined the cluster after this long is deleted and its instance terminated.",
			apply:     durationInto(func(s *Settings) *time.Duration { return &s.RegistrationTimeout })},
		{Env: "NODE_REPAIR_TOLERATIONS", Flag: "node-repair-tolerations",
			Doc:       "Comma-separated ConditionType=duration pairs replacing the cloud provider's toleration of a node condition before node repair (e.g. KernelReady=1m); needs FEATURE_GATES NodeRepair=true. Empty: the provider's tolerations.",
			Karpenter: "Dovetail's own",
			Usage:     "Comma-separated ConditionType=duration pairs replacing the cloud provider's toleration of a node condition before node repair (e.g. KernelReady=1m); needs FEATURE_GATES NodeRepair=true. Empty: the provider's tolerations.",
			apply:     applyNodeRepairTolerations},
		{Env: "REBOOT_OBSERVATION_WINDOW", Flag: "reboot-observation-window", Default: "20m",
			Doc:       "How long after the reboot call a node rebooted by node repair (AWS_FEATURE_GATES RebootForRepair=true) has to come back with a new boot ID and Ready before it is replaced.",
			Karpenter: "Dovetail's own; Karpenter's window is fixed at 20 minutes",
			Usage:     "How long after the reboot call a node rebooted by node repair has to come back (new boot ID, Ready) before it is replaced.",
			apply:     durationInto(func(s *Settings) *time.Duration { return &s.RebootObservationWindow })},
		{Env: "KUBERNETES_VERSION_REFRESH_INTERVAL", Flag: "kubernetes-version-refresh-interval", Default: "5m",
			Doc:       "How often the cluster's Kubernetes version is read again (from the API server, or EKS `DescribeCluster` with `EKS_CONTROL_PLANE=true`); a control-plane upgrade reaches `@latest` AMI aliases, and so AMI drift, within this interval plus `AMI_REFRESH_INTERVAL`, without a restart.",
			Karpenter: "Dovetail's own; Karpenter reads the version every 5 minutes",
			Usage:     "How often the cluster's Kubernetes version is read again (API server, or EKS DescribeCluster with EKS_CONTROL_PLANE=true).",
			apply:     durationInto(func(s *Settings) *time.Duration { return &s.KubernetesVersionRefreshInterval })},
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
	// As in Karpenter these gates are accepted whatever node repair does, but they act only on repair as a
	// disruption method: say so rather than ignore them silently.
	for _, g := range []struct {
		name string
		on   bool
	}{
		{"FEATURE_GATES " + FeatureTerminateFirstRepair, s.FeatureEnabled(FeatureTerminateFirstRepair)},
		{"AWS_FEATURE_GATES " + AWSFeatureRebootForRepair, s.AWSFeatureEnabled(AWSFeatureRebootForRepair)},
	} {
		switch {
		case g.on && !s.FeatureEnabled(FeatureNodeRepair):
			s.Warnings = append(s.Warnings, fmt.Sprintf("%s=true has no effect without FEATURE_GATES %s=true", g.name, FeatureNodeRepair))
		case g.on && s.LegacyNodeRepair:
			s.Warnings = append(s.Warnings, fmt.Sprintf("%s=true has no effect with LEGACY_NODE_REPAIR=true (the legacy repair controller only replaces nodes)", g.name))
		}
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

// onlyBool accepts a boolean, and refuses (with refusal) the value other than accepted: a Karpenter setting
// whose other value asks for a behaviour Dovetail does not have.
func onlyBool(accepted bool, field func(*Settings) *bool, refusal string) func(*Settings, string) error {
	return func(s *Settings, v string) error {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("must be true or false, got %q", v)
		}
		if b != accepted {
			return errors.New(refusal)
		}
		*field(s) = b
		return nil
	}
}

// refreshInto reads a refresh interval: a duration of at least a minute, as Karpenter requires.
func refreshInto(field func(*Settings) *time.Duration) func(*Settings, string) error {
	return func(s *Settings, v string) error {
		d, err := time.ParseDuration(v)
		if err != nil {
			return fmt.Errorf("must be a duration such as 1m or 5m, got %q", v)
		}
		if d < time.Minute {
			return fmt.Errorf("must be at least 1m, got %s", d)
		}
		*field(s) = d
		return nil
	}
}

// pathsInto reads comma-separated log destinations; none may be empty.
func pathsInto(field func(*Settings) *[]string) func(*Settings, string) error {
	return func(s *Settings, v string) error {
		var out []string
		for _, p := range strings.Split(v, ",") {
			p = strings.TrimSpace(p)
			if p == "" {
				return fmt.Errorf("an empty path in %q: give stdout, stderr or file paths, separated by commas", v)
			}
			out = append(out, p)
		}
		*field(s) = out
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
