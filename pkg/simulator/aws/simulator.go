package awssim

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"math/rand"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"time"

	"k8s.io/utils/clock"

	"github.com/dovetail/dovetail/pkg/catalog"
)

// Options configure a Simulator. Zero values get the defaults named on each field.
type Options struct {
	// Region is the simulated region (default us-west-2). It must exist in the catalog.
	Region string
	// Zones limits the simulated availability zones (default: the first three zones of Region in the catalog).
	Zones []string
	// ClusterName names the EKS cluster and the karpenter.sh/discovery tag value (default "dovetail").
	ClusterName string
	// ClusterEndpoint is the API server URL EKS DescribeCluster returns (default https://127.0.0.1:6443).
	ClusterEndpoint string
	// ClusterCA is the PEM CA bundle EKS DescribeCluster returns (base64-encoded on the wire).
	ClusterCA []byte
	// KubernetesVersion is the cluster version used for EKS and the SSM AMI parameters (default 1.34).
	KubernetesVersion string
	// ServiceCIDR is the cluster service CIDR EKS returns (default 10.100.0.0/16).
	ServiceCIDR string
	// IPFamily is the cluster's IP family, "ipv4" (default) or "ipv6". An IPv6 cluster (ipv6.go): EKS
	// DescribeCluster reports ipFamily ipv6 and ServiceIPv6CIDR, the VPC and each subnet have an IPv6 range, an
	// instance launched with an IPv6 address request gets one, and an instance gets a Node only when it has an
	// IPv6 address and its user data gives the kubelet an IPv6 cluster DNS address.
	IPFamily string
	// IPv6OnlySubnets, in an IPv6 cluster, makes every subnet IPv6-only (ipv6Native, no IPv4 range): instances
	// launched into them have no private IPv4 address and a resource-name DNS name (ipv6.go).
	IPv6OnlySubnets bool
	// ServiceIPv6CIDR is the IPv6 service CIDR EKS returns for an IPv6 cluster (default fd00:10:96::/108).
	ServiceIPv6CIDR string
	// Queues are SQS queues created in every account (default: one named ClusterName).
	Queues []string
	// Clock drives the instance lifecycle, SQS visibility and long polls (default: the real clock).
	Clock clock.Clock
	// Nodes receives Node create/delete/untaint calls (default: none; instances run without Nodes).
	Nodes NodeSink
	// ClusterNodes are further clusters sharing the simulated account, keyed by their API server URL: an
	// instance whose user data names one of these endpoints gets its Node there instead of in Nodes. With
	// ClusterNodes set, an instance naming an endpoint that is neither ClusterEndpoint nor a key here gets no
	// Node (its kubelet could not join anything). Needs Nodes.
	ClusterNodes map[string]NodeSink
	// Timing sets lifecycle durations.
	Timing Timing
	// Catalog is the instance catalog (default: catalog.Load()).
	Catalog *catalog.Catalog
	// Devices, when set, gives the ResourceSlices the DRA drivers of a node would publish; the Node of each
	// instance then carries them (NodeSpec.ResourceSlices). Nil: Nodes carry no ResourceSlices.
	Devices DeviceModels
	// Logger receives simulator logs (default: discard).
	Logger *slog.Logger
	// ResponseDelay is a real-time pause before each response is sent, to model network latency (default
	// none; zero or negative is none).
	ResponseDelay time.Duration
	// Seed seeds the random source for throttling faults and taint delays (default 1).
	Seed int64
	// IAMPolicy, when set, is an IAM identity policy (JSON, possibly a template with ${VAR} placeholders) every
	// call is authorized against, as if the caller's role had only this policy. Empty: everything is allowed.
	IAMPolicy []byte
	// IAMPolicyVars fill the policy template's placeholders, over the defaults AWS_PARTITION (aws),
	// AWS_REGION, AWS_ACCOUNT_ID (each account's number), CLUSTER_NAME and INTERRUPTION_QUEUE (Queues[0]).
	IAMPolicyVars map[string]string
}

// Timing holds the instance lifecycle durations.
type Timing struct {
	// Pending is how long an instance stays pending before running (default 2s).
	Pending time.Duration
	// ShuttingDown is how long an instance stays shutting-down before terminated (default 2s).
	ShuttingDown time.Duration
	// TerminatedRetention is how long terminated instances stay visible (default 1m).
	TerminatedRetention time.Duration
	// UninitializedTaintDelayMin/Max bound the delay, after the Node is created, before the
	// node.cloudprovider.kubernetes.io/uninitialized taint is removed; a random value in [Min,Max] is used
	// (default 1s for both). A negative Min keeps the taint forever.
	UninitializedTaintDelayMin time.Duration
	UninitializedTaintDelayMax time.Duration
	// Tick is how often Run advances the lifecycle (default 100ms).
	Tick time.Duration
	// Reboot is how long a rebooted instance's Node stays NotReady before it is back with a new boot ID
	// (default 5s).
	Reboot time.Duration
}

// kubernetesVersionPattern is the form of a Kubernetes version the simulator accepts (major.minor).
var kubernetesVersionPattern = regexp.MustCompile(`^1\.\d+$`)

// Simulator is the in-memory AWS. It is an http.Handler serving every simulated service on one endpoint.
type Simulator struct {
	opts    Options
	cat     *catalog.Catalog
	clock   clock.Clock
	log     *slog.Logger
	zones   []catalog.Zone
	started time.Time

	mu sync.Mutex
	// k8sVersion is the cluster's Kubernetes version (EKS DescribeCluster, SSM AMI parameters, kubelets); it
	// starts as Options.KubernetesVersion and changes with SetKubernetesVersion (a control-plane upgrade).
	k8sVersion string
	rng        *rand.Rand
	accounts   map[string]*account
	faults     faults
	// calls counts API calls by action since start (CreateFleet, DescribeInstances, ...).
	calls map[string]int
	// serviceCalls counts API calls by service family (ec2, iam, ssm, pricing, sqs, eks, events, sts).
	serviceCalls map[string]int
	// capacityRefusals counts, by pool "type/zone/capacity-type", the launch requests (CreateFleet overrides,
	// RunInstances) an injected capacity fault refused: how often a client retried an offering it was told is
	// out of capacity.
	capacityRefusals map[string]int
	// nodeClaimInstances holds, for each NodeClaim, the instances that ever carried its karpenter.sh/nodeclaim tag,
	// whatever became of them: more than one is a NodeClaim launched twice.
	nodeClaimInstances map[string]map[string]bool
	// launches holds every instance launched since start, in order; never pruned (unlike the accounts' instances,
	// which forget terminated ones), so the tags added after launch are read from it too.
	launches []launch
	// spotOverrides maps "type/zone" to an admin-set spot price.
	spotOverrides map[string]float64
	seq           uint64
	// wake is closed and replaced whenever an SQS message is sent, waking long polls.
	wake chan struct{}
	// policy is the enforced IAM policy (see SetIAMPolicy).
	policy policyState
	// callLog records mutating EC2 and IAM calls (GET /_awssim/calls).
	callLog callLog
	// zonalShifts are the cluster's ARC zonal shifts, expired ones included (zonalshift.go).
	zonalShifts []ZonalShift
}

// New builds a Simulator, filling defaults and validating options.
func New(opts Options) (*Simulator, error) {
	if opts.Region == "" {
		opts.Region = "us-west-2"
	}
	if opts.ClusterName == "" {
		opts.ClusterName = "dovetail"
	}
	if opts.ClusterEndpoint == "" {
		opts.ClusterEndpoint = "https://127.0.0.1:6443"
	}
	if opts.KubernetesVersion == "" {
		opts.KubernetesVersion = "1.34"
	}
	if len(opts.ClusterNodes) > 0 {
		if opts.Nodes == nil {
			return nil, fmt.Errorf("ClusterNodes needs Nodes (the cluster of ClusterEndpoint)")
		}
		byKey := make(map[string]NodeSink, len(opts.ClusterNodes))
		for ep, sink := range opts.ClusterNodes {
			key, err := endpointKey(ep)
			if err != nil {
				return nil, err
			}
			if primary, _ := endpointKey(opts.ClusterEndpoint); key == primary {
				return nil, fmt.Errorf("cluster endpoint %s is both ClusterEndpoint and a ClusterNodes key", ep)
			}
			byKey[key] = sink
		}
		opts.ClusterNodes = byKey
	}
	if !kubernetesVersionPattern.MatchString(opts.KubernetesVersion) {
		return nil, fmt.Errorf("kubernetes version %q must look like 1.34", opts.KubernetesVersion)
	}
	if opts.ServiceCIDR == "" {
		opts.ServiceCIDR = "10.100.0.0/16"
	}
	if err := defaultIPFamily(&opts); err != nil {
		return nil, err
	}
	if len(opts.Queues) == 0 {
		opts.Queues = []string{opts.ClusterName}
	}
	for _, q := range opts.Queues {
		if !sqsNameRE.MatchString(q) {
			return nil, fmt.Errorf("queue name %q must be 1-80 characters of letters, digits, - and _", q)
		}
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if opts.Seed == 0 {
		opts.Seed = 1
	}
	t := &opts.Timing
	if t.Pending == 0 {
		t.Pending = 2 * time.Second
	}
	if t.ShuttingDown == 0 {
		t.ShuttingDown = 2 * time.Second
	}
	if t.TerminatedRetention == 0 {
		t.TerminatedRetention = time.Minute
	}
	if t.Reboot == 0 {
		t.Reboot = 5 * time.Second
	}
	if t.UninitializedTaintDelayMin == 0 && t.UninitializedTaintDelayMax == 0 {
		t.UninitializedTaintDelayMin, t.UninitializedTaintDelayMax = time.Second, time.Second
	}
	if t.UninitializedTaintDelayMax < t.UninitializedTaintDelayMin {
		t.UninitializedTaintDelayMax = t.UninitializedTaintDelayMin
	}
	if t.Tick == 0 {
		t.Tick = 100 * time.Millisecond
	}
	if t.Pending < 0 || t.ShuttingDown < 0 || t.TerminatedRetention < 0 || t.Tick < 0 {
		return nil, fmt.Errorf("timing durations must not be negative: %+v", *t)
	}
	cat := opts.Catalog
	if cat == nil {
		c, err := catalog.Load()
		if err != nil {
			return nil, fmt.Errorf("loading instance catalog: %w", err)
		}
		cat = c
	}
	region, ok := cat.Region(opts.Region)
	if !ok {
		return nil, fmt.Errorf("region %q is not in the instance catalog", opts.Region)
	}
	var zones []catalog.Zone
	if len(opts.Zones) == 0 {
		zones = append(zones, region.Zones[:min(3, len(region.Zones))]...)
	} else {
		for _, name := range opts.Zones {
			found := false
			for _, z := range region.Zones {
				if z.Name == name {
					zones = append(zones, z)
					found = true
				}
			}
			if !found {
				return nil, fmt.Errorf("zone %q is not a zone of region %s in the catalog", name, opts.Region)
			}
		}
	}
	s := &Simulator{
		opts:          opts,
		k8sVersion:    opts.KubernetesVersion,
		cat:           cat,
		clock:         opts.Clock,
		log:           opts.Logger,
		zones:         zones,
		started:       opts.Clock.Now(),
		rng:           rand.New(rand.NewSource(opts.Seed)),
		accounts:      map[string]*account{},
		spotOverrides: map[string]float64{},
		wake:          make(chan struct{}),
	}
	if err := s.SetIAMPolicy(opts.IAMPolicy, opts.IAMPolicyVars); err != nil {
		return nil, err
	}
	return s, nil
}

// Region returns the simulated region.
func (s *Simulator) Region() string { return s.opts.Region }

// Catalog returns the instance catalog the simulator serves.
func (s *Simulator) Catalog() *catalog.Catalog { return s.cat }

// ServeHTTP routes a request to the simulated service it is addressed to.
func (s *Simulator) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, adminPrefix) {
		s.serveAdmin(w, r)
		return
	}
	// The whole request body is read before answering. Clients must not let net/http read a body the SDK
	// closes early (see sdk.NewHTTPClient and docs/simulator.md, "Known SDK race").
	if r.Body != nil {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, "awssim: reading request body: "+err.Error(), http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	pace(s.opts.ResponseDelay)
	acct := s.accountFor(r)
	target := r.Header.Get("X-Amz-Target")
	switch {
	case r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/clusters/"):
		s.serveEKS(w, r, acct)
	case r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/managedresources/"):
		s.serveARCZonalShift(w, r, acct)
	case strings.HasPrefix(target, "AmazonSSM."):
		s.serveJSON(w, r, acct, "1.1", strings.TrimPrefix(target, "AmazonSSM."), s.ssmHandlers())
	case strings.HasPrefix(target, "AWSPriceListService."):
		s.serveJSON(w, r, acct, "1.1", strings.TrimPrefix(target, "AWSPriceListService."), s.pricingHandlers())
	case strings.HasPrefix(target, "AmazonSQS."):
		s.serveJSON(w, r, acct, "1.0", strings.TrimPrefix(target, "AmazonSQS."), s.sqsHandlers())
	case strings.HasPrefix(target, "AWSEvents."):
		s.serveJSON(w, r, acct, "1.1", strings.TrimPrefix(target, "AWSEvents."), s.eventsHandlers())
	case r.Method == http.MethodPost:
		if err := r.ParseForm(); err != nil {
			http.Error(w, "cannot parse form: "+err.Error(), http.StatusBadRequest)
			return
		}
		p := newParams(r.PostForm)
		switch p.get("Version") {
		case ec2Version:
			s.serveEC2(w, r, acct, p)
		case iamVersion:
			s.serveIAM(w, r, acct, p)
		case stsVersion:
			s.serveSTS(w, r, acct, p)
		default:
			s.log.Warn("request for an unknown service", "version", p.get("Version"), "action", p.get("Action"))
			http.Error(w, fmt.Sprintf("awssim: unknown API version %q (action %q)", p.get("Version"), p.get("Action")),
				http.StatusBadRequest)
		}
	default:
		http.Error(w, fmt.Sprintf("awssim: no service for %s %s", r.Method, r.URL.Path), http.StatusNotFound)
	}
}

var credentialRE = regexp.MustCompile(`Credential=([^/,\s]+)/`)

// accountFor returns the account of a request: the SigV4 access key id, or "default" when unsigned.
func (s *Simulator) accountFor(r *http.Request) *account {
	key := "default"
	if m := credentialRE.FindStringSubmatch(r.Header.Get("Authorization")); m != nil {
		key = m[1]
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.accountLocked(key)
}

func (s *Simulator) accountLocked(key string) *account {
	if a, ok := s.accounts[key]; ok {
		return a
	}
	a := s.newAccount(key)
	s.accounts[key] = a
	return a
}

// accountNumber maps an access key id to a 12-digit account number (itself when it already is one).
func accountNumber(key string) string {
	if regexp.MustCompile(`^\d{12}$`).MatchString(key) {
		return key
	}
	sum := sha256.Sum256([]byte(key))
	n := uint64(0)
	for _, b := range sum[:8] {
		n = n<<8 | uint64(b)
	}
	return fmt.Sprintf("%012d", n%1_000_000_000_000)
}

// nextID returns a fresh resource id with the given prefix, e.g. i-0000000000000001a.
func (s *Simulator) nextIDLocked(prefix string) string {
	s.seq++
	return fmt.Sprintf("%s-%017x", prefix, 0x0a000000000000+s.seq)
}

func (s *Simulator) requestID() string {
	s.mu.Lock()
	s.seq++
	n := s.seq
	s.mu.Unlock()
	sum := sha256.Sum256(fmt.Appendf(nil, "req-%d", n))
	h := hex.EncodeToString(sum[:16])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

// Run advances the instance lifecycle every Timing.Tick until ctx is done.
func (s *Simulator) Run(ctx context.Context) error {
	for {
		t := s.clock.NewTimer(s.opts.Timing.Tick)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C():
			s.Step(ctx)
		}
	}
}

func pace(d time.Duration) {
	if d > 0 {
		time.Sleep(d)
	}
}
