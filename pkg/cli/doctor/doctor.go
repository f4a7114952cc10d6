package doctor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"

	awsv1 "github.com/dovetail/dovetail/api/aws/v1"
	"github.com/dovetail/dovetail/pkg/providers/aws/resolve"
	"github.com/dovetail/dovetail/pkg/providers/aws/sdk"
	"github.com/dovetail/dovetail/pkg/providers/aws/tags"
)

// STSAPI is the part of STS doctor calls.
type STSAPI interface {
	GetCallerIdentity(context.Context, *sts.GetCallerIdentityInput, ...func(*sts.Options)) (*sts.GetCallerIdentityOutput, error)
}

// IAMAPI is the part of IAM doctor calls (read-only).
type IAMAPI interface {
	SimulatePrincipalPolicy(context.Context, *iam.SimulatePrincipalPolicyInput, ...func(*iam.Options)) (*iam.SimulatePrincipalPolicyOutput, error)
	GetInstanceProfile(context.Context, *iam.GetInstanceProfileInput, ...func(*iam.Options)) (*iam.GetInstanceProfileOutput, error)
	GetRole(context.Context, *iam.GetRoleInput, ...func(*iam.Options)) (*iam.GetRoleOutput, error)
}

// SQSAPI is the part of SQS doctor calls.
type SQSAPI interface {
	GetQueueUrl(context.Context, *sqs.GetQueueUrlInput, ...func(*sqs.Options)) (*sqs.GetQueueUrlOutput, error)
	GetQueueAttributes(context.Context, *sqs.GetQueueAttributesInput, ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error)
}

// EventsAPI is the part of EventBridge doctor calls.
type EventsAPI interface {
	ListRules(context.Context, *eventbridge.ListRulesInput, ...func(*eventbridge.Options)) (*eventbridge.ListRulesOutput, error)
	ListTargetsByRule(context.Context, *eventbridge.ListTargetsByRuleInput, ...func(*eventbridge.Options)) (*eventbridge.ListTargetsByRuleOutput, error)
}

// AWS are the clients doctor reads AWS with.
type AWS struct {
	STS    STSAPI
	IAM    IAMAPI
	SQS    SQSAPI
	Events EventsAPI
	// Clients are the controller's own clients (EC2, SSM, IAM), for resolving node class selectors exactly as
	// the controller does.
	Clients *sdk.Clients
}

// NewAWS builds the clients from an SDK configuration (sdk.LoadConfig: the controller's credentials chain,
// AWS_REGION and AWS_ENDPOINT_URL).
func NewAWS(cfg aws.Config) *AWS {
	return &AWS{
		STS:     sts.NewFromConfig(cfg),
		IAM:     iam.NewFromConfig(cfg),
		SQS:     sqs.NewFromConfig(cfg),
		Events:  eventbridge.NewFromConfig(cfg),
		Clients: sdk.NewClients(cfg),
	}
}

// ControllerActions are the IAM actions the controller calls (pkg/providers/aws/sdk's interfaces), checked with
// IAM SimulatePrincipalPolicy. QueueActions are added when an interruption queue is set.
var (
	ControllerActions = []string{
		"ec2:CreateFleet", "ec2:RunInstances", "ec2:CreateLaunchTemplate", "ec2:DeleteLaunchTemplate",
		"ec2:DescribeLaunchTemplates", "ec2:CreateTags", "ec2:TerminateInstances", "ec2:DescribeInstances", "ec2:DescribeInstanceStatus",
		"ec2:DescribeInstanceTypes", "ec2:DescribeInstanceTypeOfferings", "ec2:DescribeAvailabilityZones",
		"ec2:DescribeSpotPriceHistory", "ec2:DescribeSubnets", "ec2:DescribeSecurityGroups", "ec2:DescribeImages",
		"ec2:DescribePlacementGroups",
		"ssm:GetParameter", "pricing:GetProducts", "eks:DescribeCluster",
		"iam:GetInstanceProfile", "iam:CreateInstanceProfile", "iam:DeleteInstanceProfile", "iam:ListInstanceProfiles",
		"iam:AddRoleToInstanceProfile", "iam:RemoveRoleFromInstanceProfile", "iam:TagInstanceProfile", "iam:PassRole",
	}
	QueueActions = []string{"sqs:GetQueueUrl", "sqs:ReceiveMessage", "sqs:DeleteMessage"}
	// RebootActions are added when node repair may reboot nodes (AWS_FEATURE_GATES RebootForRepair=true).
	RebootActions = []string{"ec2:RebootInstances"}
)

// Doctor runs the checks.
type Doctor struct {
	Kube Reader
	// AWS is nil when AWS checks are skipped (--skip-aws).
	AWS     *AWS
	Cluster tags.Cluster
	Region  string
	// Queue is the interruption queue's name (INTERRUPTION_QUEUE); empty means interruption handling is off.
	Queue string
	// RebootForRepair is the AWS feature gate RebootForRepair: node repair may call ec2:RebootInstances.
	RebootForRepair bool
	// PrincipalARN is the IAM principal whose permissions are simulated; empty: derived from the caller identity.
	PrincipalARN string
	// K8sVersion is the cluster's minor version ("1.34"), for AMI aliases.
	K8sVersion string
	// UninitializedTimeout is how long a node may carry the cloud provider's uninitialized taint.
	UninitializedTimeout time.Duration
	// LeaseName is the leader Lease's name (LEADER_ELECTION_NAME); empty means Karpenter's default.
	LeaseName string
	// Namespace is the controller's namespace, where it shares the leader Lease; empty means kube-system.
	Namespace string
	Clock     clock.PassiveClock
}

// Run runs every check and returns the report; it fails only when the cluster cannot be read at all.
func (d *Doctor) Run(ctx context.Context) (*Report, error) {
	r := &Report{}
	st, err := readCluster(ctx, d.Kube)
	if err != nil {
		return nil, err
	}
	zones := map[string][]string{} // node class -> zones of its subnets
	var instances, launched []ec2types.Instance
	if d.AWS != nil {
		principal := d.identity(ctx, r)
		d.permissions(ctx, r, principal)
		for _, nc := range st.classes {
			zones[nc.Name] = d.nodeClass(ctx, r, nc)
		}
		d.queue(ctx, r)
		instances, launched = d.clusterInstances(ctx, r)
	} else {
		for _, nc := range st.classes {
			for _, s := range nc.Status.Subnets {
				zones[nc.Name] = appendUnique(zones[nc.Name], s.Zone)
			}
			placementGroupStatus(r, nc)
			efaInterfaces(r, nc)
		}
	}
	d.daemonSets(r, st)
	d.leftovers(r, st, instances)
	d.uninitializedNodes(r, st)
	d.nodePools(r, st, zones)
	d.migrationLease(ctx, r)
	d.migrationController(ctx, r)
	if d.AWS != nil {
		d.migrationInstances(r, st, launched)
	}
	return r, nil
}

// identity checks the credentials with STS GetCallerIdentity and returns the IAM principal to simulate.
func (d *Doctor) identity(ctx context.Context, r *Report) string {
	out, err := d.AWS.STS.GetCallerIdentity(ctx, &sts.GetCallerIdentityInput{})
	if err != nil {
		r.fail("identity", "give the controller credentials: IRSA (eks.amazonaws.com/role-arn on its ServiceAccount) or EKS Pod Identity; locally AWS_PROFILE or AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, with AWS_REGION (and AWS_ENDPOINT_URL for a simulator)",
			"STS GetCallerIdentity failed: %v", err)
		return d.PrincipalARN
	}
	arn := aws.ToString(out.Arn)
	r.pass("identity", "%s (account %s, region %s)", arn, aws.ToString(out.Account), d.Region)
	if d.PrincipalARN != "" {
		return d.PrincipalARN
	}
	return principalOf(arn)
}

// principalOf turns an assumed-role session ARN into its role's ARN (SimulatePrincipalPolicy takes roles and
// users, not sessions); other ARNs are returned as they are. A role path is not in the session ARN: pass
// --role-arn for roles with a path.
func principalOf(arn string) string {
	parts := strings.SplitN(arn, ":", 6)
	if len(parts) == 6 && parts[2] == "sts" && strings.HasPrefix(parts[5], "assumed-role/") {
		role := strings.SplitN(strings.TrimPrefix(parts[5], "assumed-role/"), "/", 2)[0]
		return fmt.Sprintf("arn:%s:iam::%s:role/%s", parts[1], parts[4], role)
	}
	return arn
}

// permissions simulates the controller's actions for the principal.
func (d *Doctor) permissions(ctx context.Context, r *Report, principal string) {
	if principal == "" {
		r.warn("iam-permissions", "pass --role-arn with the controller's IAM role", "no principal to simulate (the identity check failed)")
		return
	}
	actions := append([]string(nil), ControllerActions...)
	if d.Queue != "" {
		actions = append(actions, QueueActions...)
	}
	if d.RebootForRepair {
		actions = append(actions, RebootActions...)
	}
	var denied []string
	in := &iam.SimulatePrincipalPolicyInput{PolicySourceArn: aws.String(principal), ActionNames: actions}
	for {
		out, err := d.AWS.IAM.SimulatePrincipalPolicy(ctx, in)
		if err != nil {
			r.warn("iam-permissions", "allow iam:SimulatePrincipalPolicy on the principal running doctor, or pass --role-arn; compare the role's policy with docs/install.md",
				"cannot simulate the permissions of %s: %v", principal, err)
			return
		}
		for _, e := range out.EvaluationResults {
			if e.EvalDecision != "allowed" {
				denied = append(denied, aws.ToString(e.EvalActionName))
			}
		}
		if !out.IsTruncated || aws.ToString(out.Marker) == "" {
			break
		}
		in.Marker = out.Marker
	}
	if len(denied) > 0 {
		sort.Strings(denied)
		r.fail("iam-permissions", fmt.Sprintf("add to %s's policy: %s (the controller policy is in docs/install.md)", principal, strings.Join(denied, ", ")),
			"%d of %d actions denied to %s: %s", len(denied), len(actions), principal, strings.Join(denied, ", "))
		return
	}
	r.pass("iam-permissions", "%s may call all %d actions the controller uses", principal, len(actions))
}

// minFreeIPs is the free address count below which a subnet gets a warning.
const minFreeIPs = 16

// nodeClass checks what an EC2NodeClass selects, the way the controller resolves it, and returns the zones of
// its subnets.
func (d *Doctor) nodeClass(ctx context.Context, r *Report, nc *nodeClass) []string {
	res := resolve.New(d.AWS.Clients, d.Cluster, clock.RealClock{})
	name := nc.Name
	var zones []string
	subnets, err := res.Subnets(ctx, nc.Spec.SubnetSelectorTerms)
	switch {
	case err != nil:
		r.fail("nodeclass-subnets/"+name, "fix spec.subnetSelectorTerms, or tag the subnets (e.g. karpenter.sh/discovery: "+d.Cluster.Name+")",
			"EC2NodeClass %s: %v", name, err)
	default:
		ids := make([]string, 0, len(subnets))
		for _, s := range subnets {
			ids = append(ids, s.ID)
			zones = appendUnique(zones, s.Zone)
		}
		free, low, err := d.freeIPs(ctx, ids)
		if err != nil {
			r.warn("nodeclass-subnets/"+name, "allow ec2:DescribeSubnets", "EC2NodeClass %s: %d subnets in %s; free addresses unknown: %v", name, len(ids), strings.Join(zones, ", "), err)
			break
		}
		switch {
		case free == 0:
			r.fail("nodeclass-subnets/"+name, "add subnets with free addresses to the selector, or free addresses in "+strings.Join(ids, ", "),
				"EC2NodeClass %s: %d subnets in %s have no free address", name, len(ids), strings.Join(zones, ", "))
		case len(low) > 0:
			r.warn("nodeclass-subnets/"+name, "add larger subnets in those zones to the selector",
				"EC2NodeClass %s: %d subnets in %s, %d free addresses; fewer than %d in %s", name, len(ids), strings.Join(zones, ", "), free, minFreeIPs, strings.Join(low, ", "))
		default:
			r.pass("nodeclass-subnets/"+name, "EC2NodeClass %s: %d subnets in %s, %d free addresses", name, len(ids), strings.Join(zones, ", "), free)
		}
	}
	if sgs, err := res.SecurityGroups(ctx, nc.Spec.SecurityGroupSelectorTerms); err != nil {
		r.fail("nodeclass-security-groups/"+name, "fix spec.securityGroupSelectorTerms, or tag the node security group",
			"EC2NodeClass %s: %v", name, err)
	} else {
		ids := make([]string, 0, len(sgs))
		for _, g := range sgs {
			ids = append(ids, g.ID)
		}
		r.pass("nodeclass-security-groups/"+name, "EC2NodeClass %s: %s", name, strings.Join(ids, ", "))
	}
	if amis, err := res.AMIs(ctx, &nc.EC2NodeClass, d.K8sVersion); err != nil {
		r.fail("nodeclass-amis/"+name, "fix spec.amiSelectorTerms (an alias such as al2023@latest, or AMI ids/tags/names your account can launch)",
			"EC2NodeClass %s (Kubernetes %s): %v", name, d.K8sVersion, err)
	} else {
		ids := make([]string, 0, len(amis))
		for _, a := range amis {
			ids = append(ids, a.ID)
		}
		r.pass("nodeclass-amis/"+name, "EC2NodeClass %s: %s", name, strings.Join(ids, ", "))
	}
	d.instanceProfile(ctx, r, nc)
	d.placementGroup(ctx, r, res, nc)
	efaInterfaces(r, nc)
	return zones
}

// Reasons of a False PlacementGroupReady condition, as the node class status controller sets them.
const (
	reasonPlacementGroupNotFound         = "PlacementGroupNotFound"
	reasonPlacementGroupResolutionFailed = "PlacementGroupResolutionFailed"
)

// placementGroup resolves spec.placementGroupSelector as the controller does; a failure is reported with the
// reason the controller's PlacementGroupReady condition carries for it.
func (d *Doctor) placementGroup(ctx context.Context, r *Report, res *resolve.Resolver, nc *nodeClass) {
	sel := nc.Spec.PlacementGroupSelector
	if sel == nil {
		return
	}
	check := "nodeclass-placement-group/" + nc.Name
	pg, err := res.PlacementGroup(ctx, sel)
	var noMatch *resolve.NoMatchError
	switch {
	case errors.As(err, &noMatch):
		r.fail(check, "create the placement group in "+d.Region+", or make spec.placementGroupSelector name an available one",
			"EC2NodeClass %s: PlacementGroupReady=False (%s): %v; its NodePools launch nothing", nc.Name, reasonPlacementGroupNotFound, err)
	case err != nil:
		r.fail(check, "allow ec2:DescribePlacementGroups and check spec.placementGroupSelector",
			"EC2NodeClass %s: PlacementGroupReady=False (%s): %v; its NodePools launch nothing", nc.Name, reasonPlacementGroupResolutionFailed, err)
	default:
		r.pass(check, "EC2NodeClass %s: placement group %s (%s, strategy %s)", nc.Name, pg.Name, pg.ID, pg.Strategy)
	}
}

// placementGroupStatus reports the PlacementGroupReady condition the controller set, when AWS is not read.
func placementGroupStatus(r *Report, nc *nodeClass) {
	if nc.Spec.PlacementGroupSelector == nil {
		return
	}
	check := "nodeclass-placement-group/" + nc.Name
	c := meta.FindStatusCondition(nc.Status.Conditions, awsv1.ConditionTypePlacementGroupReady)
	switch {
	case c == nil:
		r.warn(check, "check that the controller runs", "EC2NodeClass %s: no PlacementGroupReady condition yet", nc.Name)
	case c.Status == metav1.ConditionFalse:
		fix := "allow ec2:DescribePlacementGroups and check spec.placementGroupSelector"
		if c.Reason == reasonPlacementGroupNotFound {
			fix = "create the placement group, or make spec.placementGroupSelector name an available one"
		}
		r.fail(check, fix, "EC2NodeClass %s: PlacementGroupReady=False (%s): %s; its NodePools launch nothing", nc.Name, c.Reason, c.Message)
	default:
		r.pass(check, "EC2NodeClass %s: PlacementGroupReady=%s", nc.Name, c.Status)
	}
}

// efaInterfaces says which instance types a node class's efa-only network interfaces leave out.
func efaInterfaces(r *Report, nc *nodeClass) {
	n := 0
	for _, ni := range nc.Spec.NetworkInterfaces {
		if ni.InterfaceType == awsv1.InterfaceTypeEFAOnly {
			n++
		}
	}
	if n == 0 {
		return
	}
	r.pass("nodeclass-efa/"+nc.Name, "EC2NodeClass %s asks for %d efa-only network interface(s): instance types without that many EFA interfaces (or the network cards and device indexes spec.networkInterfaces names) are left out",
		nc.Name, n)
}

// freeIPs sums the subnets' free addresses and names those with fewer than minFreeIPs.
func (d *Doctor) freeIPs(ctx context.Context, ids []string) (int, []string, error) {
	if len(ids) == 0 {
		return 0, nil, nil
	}
	out, err := d.AWS.Clients.EC2.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{SubnetIds: ids})
	if err != nil {
		return 0, nil, err
	}
	total := 0
	var low []string
	for _, s := range out.Subnets {
		n := int(aws.ToInt32(s.AvailableIpAddressCount))
		total += n
		if n < minFreeIPs {
			low = append(low, fmt.Sprintf("%s (%d)", aws.ToString(s.SubnetId), n))
		}
	}
	sort.Strings(low)
	return total, low, nil
}

// instanceProfile checks that the instance profile the node class names, or the role it is made from, exists.
func (d *Doctor) instanceProfile(ctx context.Context, r *Report, nc *nodeClass) {
	check := "nodeclass-instance-profile/" + nc.Name
	if p := aws.ToString(nc.Spec.InstanceProfile); p != "" {
		out, err := d.AWS.IAM.GetInstanceProfile(ctx, &iam.GetInstanceProfileInput{InstanceProfileName: aws.String(p)})
		if err != nil {
			r.fail(check, "create the instance profile "+p+" with the node role, or set spec.role instead", "EC2NodeClass %s: instance profile %s: %v", nc.Name, p, err)
			return
		}
		if len(out.InstanceProfile.Roles) == 0 {
			r.fail(check, "add the node role to instance profile "+p, "EC2NodeClass %s: instance profile %s has no role", nc.Name, p)
			return
		}
		r.pass(check, "EC2NodeClass %s: instance profile %s (role %s)", nc.Name, p, aws.ToString(out.InstanceProfile.Roles[0].RoleName))
		return
	}
	if nc.Spec.Role == "" {
		r.fail(check, "set spec.role (the node IAM role) or spec.instanceProfile", "EC2NodeClass %s names neither a role nor an instance profile", nc.Name)
		return
	}
	role := resolve.RoleName(nc.Spec.Role)
	if _, err := d.AWS.IAM.GetRole(ctx, &iam.GetRoleInput{RoleName: aws.String(role)}); err != nil {
		r.fail(check, "create the node role "+role+" (trusting ec2.amazonaws.com, with AmazonEKSWorkerNodePolicy, AmazonEKS_CNI_Policy, AmazonEC2ContainerRegistryReadOnly, AmazonSSMManagedInstanceCore) or fix spec.role",
			"EC2NodeClass %s: role %s: %v", nc.Name, role, err)
		return
	}
	r.pass(check, "EC2NodeClass %s: role %s exists (the controller makes the instance profile)", nc.Name, role)
}

// interruptionKinds are the events the four EventBridge rules forward, by their detail-type.
var interruptionKinds = []struct{ Kind, DetailType string }{
	{"ScheduledChange", "AWS Health Event"},
	{"SpotInterruption", "EC2 Spot Instance Interruption Warning"},
	{"Rebalance", "EC2 Instance Rebalance Recommendation"},
	{"InstanceStateChange", "EC2 Instance State-change Notification"},
}

// queue checks the interruption queue, its policy and the EventBridge rules feeding it.
func (d *Doctor) queue(ctx context.Context, r *Report) {
	if d.Queue == "" {
		r.warn("interruption-queue", "create an SQS queue fed by the four EventBridge rules (docs/install.md) and set settings.interruptionQueue",
			"no interruption queue set: spot interruptions, rebalances and scheduled maintenance reach nodes without warning")
		return
	}
	u, err := d.AWS.SQS.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(d.Queue)})
	if err != nil {
		r.fail("interruption-queue", "create the queue "+d.Queue+" in "+d.Region+" (docs/install.md), or set settings.interruptionQueue to an existing queue's name",
			"queue %s: %v", d.Queue, err)
		return
	}
	attrs, err := d.AWS.SQS.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: u.QueueUrl,
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameAll}})
	if err != nil {
		r.fail("interruption-queue", "allow sqs:GetQueueAttributes on "+d.Queue+" (and sqs:ReceiveMessage, sqs:DeleteMessage)",
			"queue %s exists but cannot be read: %v", d.Queue, err)
		return
	}
	arn := attrs.Attributes[string(sqstypes.QueueAttributeNameQueueArn)]
	r.pass("interruption-queue", "%s (%s messages waiting)", arn, attrs.Attributes[string(sqstypes.QueueAttributeNameApproximateNumberOfMessages)])
	if allowsEventBridge(attrs.Attributes[string(sqstypes.QueueAttributeNamePolicy)]) {
		r.pass("interruption-queue-policy", "EventBridge (events.amazonaws.com) may send to %s", d.Queue)
	} else {
		r.fail("interruption-queue-policy", `add to the queue policy a statement {"Effect":"Allow","Principal":{"Service":["events.amazonaws.com","sqs.amazonaws.com"]},"Action":"sqs:SendMessage","Resource":"`+arn+`"}`,
			"the policy of %s does not let EventBridge send messages: no interruption event will arrive", d.Queue)
	}
	d.eventRules(ctx, r, arn)
}

// allowsEventBridge reports whether a queue policy has an Allow statement for events.amazonaws.com with
// sqs:SendMessage.
func allowsEventBridge(policy string) bool {
	if policy == "" {
		return false
	}
	var p struct {
		Statement []struct {
			Effect    string
			Principal json.RawMessage
			Action    json.RawMessage
		}
	}
	if err := json.Unmarshal([]byte(policy), &p); err != nil {
		return false
	}
	for _, s := range p.Statement {
		if s.Effect != "Allow" || !strings.Contains(string(s.Principal), "events.amazonaws.com") {
			continue
		}
		a := string(s.Action)
		if strings.Contains(a, "sqs:SendMessage") || strings.Contains(a, `"sqs:*"`) || strings.Contains(a, `"*"`) {
			return true
		}
	}
	return false
}

// eventRules checks that a rule for each of the four interruption events targets the queue.
func (d *Doctor) eventRules(ctx context.Context, r *Report, queueARN string) {
	found := map[string][]string{}
	in := &eventbridge.ListRulesInput{}
	for {
		out, err := d.AWS.Events.ListRules(ctx, in)
		if err != nil {
			r.fail("interruption-rules", "allow events:ListRules and events:ListTargetsByRule to check the rules", "EventBridge ListRules: %v", err)
			return
		}
		for _, rule := range out.Rules {
			pattern := aws.ToString(rule.EventPattern)
			var kinds []string
			for _, k := range interruptionKinds {
				if strings.Contains(pattern, k.DetailType) {
					kinds = append(kinds, k.Kind)
				}
			}
			if len(kinds) == 0 || rule.State == "DISABLED" {
				continue
			}
			targets, err := d.AWS.Events.ListTargetsByRule(ctx, &eventbridge.ListTargetsByRuleInput{Rule: rule.Name})
			if err != nil {
				r.fail("interruption-rules", "allow events:ListTargetsByRule", "EventBridge ListTargetsByRule %s: %v", aws.ToString(rule.Name), err)
				return
			}
			for _, t := range targets.Targets {
				if aws.ToString(t.Arn) == queueARN {
					for _, k := range kinds {
						found[k] = append(found[k], aws.ToString(rule.Name))
					}
				}
			}
		}
		if aws.ToString(out.NextToken) == "" {
			break
		}
		in.NextToken = out.NextToken
	}
	var missing, have []string
	for _, k := range interruptionKinds {
		if len(found[k.Kind]) == 0 {
			missing = append(missing, fmt.Sprintf("%s (%q)", k.Kind, k.DetailType))
		} else {
			have = append(have, k.Kind+": "+strings.Join(found[k.Kind], ","))
		}
	}
	if len(missing) > 0 {
		r.fail("interruption-rules", "create EventBridge rules for "+strings.Join(missing, ", ")+" targeting "+queueARN+" (docs/install.md)",
			"no enabled EventBridge rule sends %s to the queue", strings.Join(missing, ", "))
		return
	}
	r.pass("interruption-rules", "all four interruption events reach the queue (%s)", strings.Join(have, "; "))
}

// clusterInstances lists the live instances tagged with the cluster's name, and checks none belongs to another
// cluster of the same name. It returns this cluster's instances, and those Karpenter launched for a cluster of
// this name (karpenter.sh/nodepool without a cluster-UID tag), which the migration check reports.
func (d *Doctor) clusterInstances(ctx context.Context, r *Report) (owned, launched []ec2types.Instance) {
	in := &ec2.DescribeInstancesInput{Filters: []ec2types.Filter{
		{Name: aws.String("tag-key"), Values: []string{d.Cluster.ClusterTag()}},
		{Name: aws.String("instance-state-name"), Values: []string{"pending", "running", "stopping", "stopped"}},
	}}
	var others, nameOnly []string
	for {
		page, err := d.AWS.Clients.EC2.DescribeInstances(ctx, in)
		if err != nil {
			r.warn("cluster-uid", "allow ec2:DescribeInstances", "cannot list the instances tagged %s: %v", d.Cluster.ClusterTag(), err)
			return nil, nil
		}
		for _, res := range page.Reservations {
			for _, i := range res.Instances {
				t := tags.FromEC2(i.Tags)
				switch d.Cluster.Owner(t) {
				case tags.OtherCluster:
					others = append(others, aws.ToString(i.InstanceId))
				case tags.NameOnly:
					if _, ok := t[awsv1.TagNodePool]; ok {
						launched = append(launched, i)
						continue
					}
					nameOnly = append(nameOnly, aws.ToString(i.InstanceId))
				case tags.Owned:
					owned = append(owned, i)
				}
			}
		}
		if aws.ToString(page.NextToken) == "" {
			break
		}
		in.NextToken = page.NextToken
	}
	sort.Strings(others)
	switch {
	case len(others) > 0:
		r.fail("cluster-uid", "give each cluster its own name (settings.clusterName): two clusters named "+d.Cluster.Name+" see each other's instances in cost and limits",
			"%d instances are tagged %s but belong to another cluster (%s other than this cluster's %s): %s", len(others), d.Cluster.ClusterTag(), tags.ClusterUID, d.Cluster.UID, strings.Join(others, ", "))
	case len(nameOnly) > 0:
		sort.Strings(nameOnly)
		r.warn("cluster-uid", "check who launched them; Dovetail adopts none of them", "%d instances are tagged %s without a %s tag (nor %s, as Karpenter's are): %s", len(nameOnly), d.Cluster.ClusterTag(), tags.ClusterUID, awsv1.TagNodePool, strings.Join(nameOnly, ", "))
	default:
		r.pass("cluster-uid", "no instance tagged %s belongs to another cluster", d.Cluster.ClusterTag())
	}
	return owned, launched
}

func appendUnique(list []string, v string) []string {
	for _, x := range list {
		if x == v {
			return list
		}
	}
	out := append(list, v)
	sort.Strings(out)
	return out
}
