package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/dovetail/dovetail/pkg/catalog"
	awssim "github.com/dovetail/dovetail/pkg/simulator/aws"
	"github.com/dovetail/dovetail/pkg/simulator/aws/kube"
)

type serveOptions struct {
	listen            string
	kubeconfig        string
	region            string
	zones             []string
	clusterName       string
	clusterEndpoint   string
	clusterCAFile     string
	kubernetesVersion string
	serviceCIDR       string
	ipFamily          string
	ipv6OnlySubnets   bool
	serviceIPv6CIDR   string
	queues            []string
	pending           time.Duration
	shuttingDown      time.Duration
	reboot            time.Duration
	retention         time.Duration
	taintDelay        string
	tick              time.Duration
	seed              int64
	logLevel          string
	responseDelay     time.Duration
	kubeQPS           float64
	kubeBurst         int
	iamPolicy         string
	iamPolicyVars     []string
	otherClusters     []string
	draDrivers        []string
	draDeviceModels   string
}

func newServeCommand() *cobra.Command {
	o := &serveOptions{}
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the simulated AWS APIs and the /_awssim/ admin API",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.run(cmd.Context())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.listen, "listen", "127.0.0.1:4566", "address to listen on")
	f.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig of the cluster that receives the kwok Nodes (empty: no Nodes are created)")
	f.StringVar(&o.region, "region", "us-west-2", "simulated region (must be in the instance catalog)")
	f.StringSliceVar(&o.zones, "zones", nil, "simulated zones (default: the region's first three)")
	f.StringVar(&o.clusterName, "cluster-name", "dovetail", "EKS cluster name and karpenter.sh/discovery tag value")
	f.StringVar(&o.clusterEndpoint, "cluster-endpoint", "", "API server URL EKS DescribeCluster returns (default: the kubeconfig's server, else https://127.0.0.1:6443)")
	f.StringVar(&o.clusterCAFile, "cluster-ca-file", "", "PEM CA bundle EKS DescribeCluster returns (default: the kubeconfig's CA)")
	f.StringVar(&o.kubernetesVersion, "kubernetes-version", "1.34", "cluster Kubernetes version (EKS and SSM AMI parameters)")
	f.StringVar(&o.serviceCIDR, "service-cidr", "10.100.0.0/16", "service CIDR EKS DescribeCluster returns")
	f.StringVar(&o.ipFamily, "ip-family", "ipv4", "cluster IP family, ipv4 or ipv6 (an IPv6 cluster: IPv6 subnets, instances and Nodes; see docs/simulator.md)")
	f.BoolVar(&o.ipv6OnlySubnets, "ipv6-only-subnets", false, "with --ip-family ipv6: every subnet is IPv6-only (no IPv4 range; instances get no private IPv4 address)")
	f.StringVar(&o.serviceIPv6CIDR, "service-ipv6-cidr", "fd00:10:96::/108", "IPv6 service CIDR EKS DescribeCluster returns for an IPv6 cluster")
	f.StringSliceVar(&o.queues, "queues", nil, "SQS queues created in every account (default: the cluster name)")
	f.DurationVar(&o.pending, "pending-duration", 2*time.Second, "time an instance stays pending before running (and its Node appears)")
	f.DurationVar(&o.shuttingDown, "shutting-down-duration", 2*time.Second, "time an instance stays shutting-down before terminated (and its Node is deleted)")
	f.DurationVar(&o.reboot, "reboot-duration", 5*time.Second, "time a rebooted instance's Node stays NotReady before it is back with a new boot ID")
	f.DurationVar(&o.retention, "terminated-retention", time.Minute, "time terminated instances stay visible")
	f.StringVar(&o.taintDelay, "uninitialized-taint-delay", "1s", "delay before the uninitialized taint is removed: a duration, MIN-MAX for a random delay, or 'never'")
	f.DurationVar(&o.tick, "tick", 100*time.Millisecond, "lifecycle tick interval")
	f.Int64Var(&o.seed, "seed", 1, "random seed (throttling faults, taint delays)")
	f.StringVar(&o.logLevel, "log-level", "info", "log level: debug, info, warn, error")
	f.Float64Var(&o.kubeQPS, "kube-qps", 200, "queries per second to the cluster's API server (Node creation, taint removal, deletion)")
	f.IntVar(&o.kubeBurst, "kube-burst", 400, "burst of queries to the cluster's API server above --kube-qps")
	f.DurationVar(&o.responseDelay, "response-delay", 0, "real-time pause before each response, to model network latency (0: none)")
	f.StringVar(&o.iamPolicy, "iam-policy", "", "IAM policy file (JSON, ${VAR} placeholders allowed) every call is authorized against; empty allows everything")
	f.StringArrayVar(&o.otherClusters, "other-cluster-kubeconfig", nil, "kubeconfig of a further cluster sharing the simulated account (repeatable): instances whose user data names its API server (the kubeconfig's server) get their Nodes there; needs --kubeconfig")
	f.StringSliceVar(&o.draDrivers, "dra-drivers", nil, "DRA drivers whose ResourceSlices each Node gets from its instance type's device model: gpu.nvidia.com (NVIDIA GPUs, MIG partitions), dra.net (EFA interfaces); empty: none")
	f.StringVar(&o.draDeviceModels, "dra-device-models", "", "device model overrides file (the models.yaml document of Dovetail's dovetail-dra-device-models ConfigMap) adding or replacing models per instance type")
	f.StringArrayVar(&o.iamPolicyVars, "iam-policy-var", nil, "KEY=VALUE filling a ${KEY} placeholder of --iam-policy (repeatable); CLUSTER_UID defaults to the kube-system namespace UID of --kubeconfig")
	return cmd
}

// policyVars parses --iam-policy-var values.
func policyVars(kvs []string) (map[string]string, error) {
	out := map[string]string{}
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("--iam-policy-var %q: want KEY=VALUE", kv)
		}
		out[k] = v
	}
	return out, nil
}

func parseTaintDelay(s string) (time.Duration, time.Duration, error) {
	if s == "never" {
		return -1, -1, nil
	}
	lo, hi, isRange := strings.Cut(s, "-")
	min, err := time.ParseDuration(lo)
	if err != nil {
		return 0, 0, fmt.Errorf("--uninitialized-taint-delay %q: %w", s, err)
	}
	max := min
	if isRange {
		if max, err = time.ParseDuration(hi); err != nil {
			return 0, 0, fmt.Errorf("--uninitialized-taint-delay %q: %w", s, err)
		}
	}
	if min < 0 || max < min {
		return 0, 0, fmt.Errorf("--uninitialized-taint-delay %q: want MIN<=MAX, both >= 0", s)
	}
	return min, max, nil
}

func parseLevel(s string) (slog.Level, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(s)); err != nil {
		return 0, fmt.Errorf("--log-level %q: want debug, info, warn or error", s)
	}
	return l, nil
}

func (o *serveOptions) run(ctx context.Context) error {
	level, err := parseLevel(o.logLevel)
	if err != nil {
		return err
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	tmin, tmax, err := parseTaintDelay(o.taintDelay)
	if err != nil {
		return err
	}
	for name, d := range map[string]time.Duration{"--pending-duration": o.pending, "--shutting-down-duration": o.shuttingDown,
		"--terminated-retention": o.retention, "--tick": o.tick, "--reboot-duration": o.reboot} {
		if d <= 0 {
			return fmt.Errorf("%s must be positive, got %s", name, d)
		}
	}
	if o.kubeQPS <= 0 || o.kubeBurst < 1 {
		return fmt.Errorf("--kube-qps (%v) and --kube-burst (%d) must be positive", o.kubeQPS, o.kubeBurst)
	}
	if _, _, err := net.SplitHostPort(o.listen); err != nil {
		return fmt.Errorf("--listen %q: %w", o.listen, err)
	}
	opts := awssim.Options{
		Region: o.region, Zones: o.zones, ClusterName: o.clusterName, ClusterEndpoint: o.clusterEndpoint,
		KubernetesVersion: o.kubernetesVersion, ServiceCIDR: o.serviceCIDR, IPFamily: o.ipFamily,
		IPv6OnlySubnets: o.ipv6OnlySubnets,
		ServiceIPv6CIDR: o.serviceIPv6CIDR, Queues: o.queues, Logger: logger, Seed: o.seed,
		ResponseDelay: o.responseDelay,
		Timing: awssim.Timing{Pending: o.pending, ShuttingDown: o.shuttingDown, TerminatedRetention: o.retention,
			UninitializedTaintDelayMin: tmin, UninitializedTaintDelayMax: tmax, Tick: o.tick, Reboot: o.reboot},
	}
	if opts.Catalog, err = catalog.Load(); err != nil {
		return fmt.Errorf("loading instance catalog: %w", err)
	}
	if opts.Devices, err = deviceModels(opts.Catalog, o.draDrivers, o.draDeviceModels); err != nil {
		return err
	}
	if o.clusterCAFile != "" {
		ca, err := os.ReadFile(o.clusterCAFile)
		if err != nil {
			return fmt.Errorf("--cluster-ca-file: %w", err)
		}
		opts.ClusterCA = ca
	}
	if o.iamPolicy != "" {
		if opts.IAMPolicy, err = os.ReadFile(o.iamPolicy); err != nil {
			return fmt.Errorf("--iam-policy: %w", err)
		}
		if opts.IAMPolicyVars, err = policyVars(o.iamPolicyVars); err != nil {
			return err
		}
	} else if len(o.iamPolicyVars) > 0 {
		return fmt.Errorf("--iam-policy-var needs --iam-policy")
	}
	if o.kubeconfig != "" {
		cfg, err := clientcmd.BuildConfigFromFlags("", o.kubeconfig)
		if err != nil {
			return fmt.Errorf("--kubeconfig %s: %w", o.kubeconfig, err)
		}
		// client-go's default of 5 queries a second serialised a 200-node scale-out's Node calls over a minute.
		cfg.QPS, cfg.Burst = float32(o.kubeQPS), o.kubeBurst
		cs, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			return fmt.Errorf("building Kubernetes client: %w", err)
		}
		opts.Nodes = kube.New(cs)
		if _, set := opts.IAMPolicyVars["CLUSTER_UID"]; opts.IAMPolicy != nil && !set {
			uid, err := kubeSystemUID(ctx, cs)
			if err != nil {
				return fmt.Errorf("reading the kube-system namespace UID for the policy's CLUSTER_UID: %w", err)
			}
			opts.IAMPolicyVars["CLUSTER_UID"] = uid
		}
		if opts.ClusterEndpoint == "" {
			opts.ClusterEndpoint = cfg.Host
		}
		if opts.ClusterCA == nil {
			opts.ClusterCA = cfg.CAData
			if len(opts.ClusterCA) == 0 && cfg.CAFile != "" {
				if opts.ClusterCA, err = os.ReadFile(cfg.CAFile); err != nil {
					return fmt.Errorf("reading the kubeconfig's CA file: %w", err)
				}
			}
		}
		for _, path := range o.otherClusters {
			ocfg, err := clientcmd.BuildConfigFromFlags("", path)
			if err != nil {
				return fmt.Errorf("--other-cluster-kubeconfig %s: %w", path, err)
			}
			ocfg.QPS, ocfg.Burst = float32(o.kubeQPS), o.kubeBurst
			ocs, err := kubernetes.NewForConfig(ocfg)
			if err != nil {
				return fmt.Errorf("building Kubernetes client for %s: %w", path, err)
			}
			if opts.ClusterNodes == nil {
				opts.ClusterNodes = map[string]awssim.NodeSink{}
			}
			opts.ClusterNodes[ocfg.Host] = kube.New(ocs)
			logger.Info("serving a further cluster", "endpoint", ocfg.Host, "kubeconfig", path)
		}
	} else {
		if len(o.otherClusters) > 0 {
			return fmt.Errorf("--other-cluster-kubeconfig needs --kubeconfig")
		}
		logger.Warn("no --kubeconfig: instances will run without Nodes")
	}
	sim, err := awssim.New(opts)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", o.listen)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", o.listen, err)
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	srv := &http.Server{Handler: sim, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan error, 2)
	go func() { done <- sim.Run(ctx) }()
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			done <- err
		}
	}()
	logger.Info("awssim serving", "listen", ln.Addr().String(), "region", o.region, "cluster", o.clusterName,
		"kubernetes-version", o.kubernetesVersion, "nodes", o.kubeconfig != "")
	select {
	case <-ctx.Done():
	case err := <-done:
		if err != nil {
			return err
		}
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		return fmt.Errorf("shutting down: %w", err)
	}
	logger.Info("awssim stopped")
	return nil
}

// kubeSystemUID reads the kube-system namespace UID (the controller's cluster UID), waiting up to 30 s for a
// freshly started API server to create the namespace.
func kubeSystemUID(ctx context.Context, cs kubernetes.Interface) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		ns, err := cs.CoreV1().Namespaces().Get(ctx, "kube-system", metav1.GetOptions{})
		if err == nil {
			return string(ns.UID), nil
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("%w (last error: %w)", ctx.Err(), err)
		case <-tick.C:
		}
	}
}
