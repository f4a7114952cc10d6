package awssim

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	iamtypes "github.com/aws/aws-sdk-go-v2/service/iam/types"
	"github.com/aws/aws-sdk-go-v2/service/pricing"
	pricingtypes "github.com/aws/aws-sdk-go-v2/service/pricing/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"github.com/google/go-cmp/cmp"
)

func TestIAMInstanceProfiles(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	name := "dovetail_123"
	_, err := e.iam.CreateInstanceProfile(ctx, &iam.CreateInstanceProfileInput{InstanceProfileName: aws.String(name),
		Tags: []iamtypes.Tag{{Key: aws.String("karpenter.k8s.aws/ec2nodeclass"), Value: aws.String("default")}}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.iam.CreateInstanceProfile(ctx, &iam.CreateInstanceProfileInput{InstanceProfileName: aws.String(name)})
	assertCode(t, err, "EntityAlreadyExists")
	if _, err := e.iam.AddRoleToInstanceProfile(ctx, &iam.AddRoleToInstanceProfileInput{InstanceProfileName: aws.String(name),
		RoleName: aws.String("KarpenterNodeRole-dovetail")}); err != nil {
		t.Fatal(err)
	}
	_, err = e.iam.AddRoleToInstanceProfile(ctx, &iam.AddRoleToInstanceProfileInput{InstanceProfileName: aws.String(name),
		RoleName: aws.String("dovetail-node")})
	assertCode(t, err, "LimitExceeded")
	_, err = e.iam.AddRoleToInstanceProfile(ctx, &iam.AddRoleToInstanceProfileInput{InstanceProfileName: aws.String(name),
		RoleName: aws.String("no-such-role")})
	assertCode(t, err, "NoSuchEntity")
	if _, err := e.iam.TagInstanceProfile(ctx, &iam.TagInstanceProfileInput{InstanceProfileName: aws.String(name),
		Tags: []iamtypes.Tag{{Key: aws.String("extra"), Value: aws.String("1")}}}); err != nil {
		t.Fatal(err)
	}
	got, err := e.iam.GetInstanceProfile(ctx, &iam.GetInstanceProfileInput{InstanceProfileName: aws.String(name)})
	if err != nil {
		t.Fatal(err)
	}
	ip := got.InstanceProfile
	if len(ip.Roles) != 1 || aws.ToString(ip.Roles[0].RoleName) != "KarpenterNodeRole-dovetail" || len(ip.Tags) != 2 ||
		!strings.HasSuffix(aws.ToString(ip.Arn), ":instance-profile/"+name) || ip.CreateDate == nil {
		t.Errorf("profile = %+v", ip)
	}
	list, err := e.iam.ListInstanceProfiles(ctx, &iam.ListInstanceProfilesInput{})
	if err != nil || len(list.InstanceProfiles) != 1 {
		t.Errorf("list = %+v, %v", list, err)
	}
	_, err = e.iam.DeleteInstanceProfile(ctx, &iam.DeleteInstanceProfileInput{InstanceProfileName: aws.String(name)})
	assertCode(t, err, "DeleteConflict")
	if _, err := e.iam.RemoveRoleFromInstanceProfile(ctx, &iam.RemoveRoleFromInstanceProfileInput{InstanceProfileName: aws.String(name),
		RoleName: aws.String("KarpenterNodeRole-dovetail")}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.iam.DeleteInstanceProfile(ctx, &iam.DeleteInstanceProfileInput{InstanceProfileName: aws.String(name)}); err != nil {
		t.Fatal(err)
	}
	_, err = e.iam.GetInstanceProfile(ctx, &iam.GetInstanceProfileInput{InstanceProfileName: aws.String(name)})
	assertCode(t, err, "NoSuchEntity")
	role, err := e.iam.GetRole(ctx, &iam.GetRoleInput{RoleName: aws.String("KarpenterNodeRole-dovetail")})
	if err != nil || aws.ToString(role.Role.RoleName) != "KarpenterNodeRole-dovetail" {
		t.Errorf("role = %+v, %v", role, err)
	}
}

func TestSQSRoundTripAndEvents(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	url, err := e.sqs.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String("dovetail")})
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.sqs.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String("nope")})
	assertCode(t, err, "AWS.SimpleQueueService.NonExistentQueue")

	if _, err := e.sqs.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: url.QueueUrl, MessageBody: aws.String("hello")}); err != nil {
		t.Fatal(err)
	}
	recv, err := e.sqs.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: url.QueueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 20, VisibilityTimeout: 30})
	if err != nil || len(recv.Messages) != 1 || aws.ToString(recv.Messages[0].Body) != "hello" {
		t.Fatalf("receive = %+v, %v", recv, err)
	}
	// Invisible until the visibility timeout passes.
	again, err := e.sqs.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: url.QueueUrl})
	if err != nil || len(again.Messages) != 0 {
		t.Fatalf("receive while invisible = %+v, %v", again, err)
	}
	e.clock.Step(31 * time.Second)
	again, err = e.sqs.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: url.QueueUrl})
	if err != nil || len(again.Messages) != 1 {
		t.Fatalf("receive after visibility timeout = %+v, %v", again, err)
	}
	if _, err := e.sqs.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: url.QueueUrl, ReceiptHandle: again.Messages[0].ReceiptHandle}); err != nil {
		t.Fatal(err)
	}
	_, err = e.sqs.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: url.QueueUrl, ReceiptHandle: aws.String("bogus")})
	assertCode(t, err, "ReceiptHandleIsInvalid")

	// A long poll returns as soon as an event arrives.
	e.launchTemplate(t, "lt-events", "x86_64", "")
	id := launchOne(t, e, "lt-events", "m5.large", "us-west-2a", ec2types.DefaultTargetCapacityTypeSpot)
	got := make(chan *sqs.ReceiveMessageOutput, 1)
	go func() {
		out, err := e.sqs.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: url.QueueUrl, WaitTimeSeconds: 20, MaxNumberOfMessages: 10})
		if err != nil {
			t.Error(err)
		}
		got <- out
	}()
	waitFor(t, func() bool { return e.clock.HasWaiters() })
	if _, err := e.sim.SendEvent(EventRequest{Kind: EventSpotInterruption, InstanceID: id}); err != nil {
		t.Fatal(err)
	}
	var out *sqs.ReceiveMessageOutput
	select {
	case out = <-got:
	case <-time.After(10 * time.Second):
		t.Fatal("long poll did not return after an event was sent")
	}
	if out == nil || len(out.Messages) != 1 {
		t.Fatalf("long poll = %+v", out)
	}
	var env struct {
		DetailType string            `json:"detail-type"`
		Source     string            `json:"source"`
		Resources  []string          `json:"resources"`
		Detail     map[string]string `json:"detail"`
	}
	if err := json.Unmarshal([]byte(aws.ToString(out.Messages[0].Body)), &env); err != nil {
		t.Fatal(err)
	}
	if env.DetailType != "EC2 Spot Instance Interruption Warning" || env.Source != "aws.ec2" || env.Detail["instance-id"] != id ||
		env.Detail["instance-action"] != "terminate" || len(env.Resources) != 1 || !strings.HasSuffix(env.Resources[0], "instance/"+id) {
		t.Errorf("envelope = %+v", env)
	}
	if _, err := e.sqs.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: url.QueueUrl, ReceiptHandle: out.Messages[0].ReceiptHandle}); err != nil {
		t.Fatal(err)
	}
	// The interrupted spot instance is terminated two minutes later.
	e.advance(2 * time.Second)
	e.advance(117 * time.Second)
	if s := instanceByID(t, e, id).State; s != StateRunning {
		t.Errorf("state before the 2-minute warning ended = %s", s)
	}
	e.advance(time.Second)
	if s := instanceByID(t, e, id).State; s != StateShuttingDown {
		t.Errorf("state after the warning = %s", s)
	}
	// Long poll with no message ends when the wait time passes.
	done := make(chan int, 1)
	go func() {
		out, err := e.sqs.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: url.QueueUrl, WaitTimeSeconds: 5})
		if err != nil {
			t.Error(err)
		}
		done <- len(out.Messages)
	}()
	waitFor(t, func() bool { return e.clock.HasWaiters() })
	e.clock.Step(5 * time.Second)
	select {
	case n := <-done:
		if n != 0 {
			t.Errorf("empty long poll returned %d messages", n)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("long poll did not end after WaitTimeSeconds")
	}
}

// waitFor polls cond until it holds or a deadline passes.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met before the deadline")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestEventKinds(t *testing.T) {
	e := newEnv(t)
	e.launchTemplate(t, "lt-kinds", "x86_64", "")
	id := launchOne(t, e, "lt-kinds", "m5.large", "us-west-2a", ec2types.DefaultTargetCapacityTypeOnDemand)
	start := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	tests := []struct {
		req        EventRequest
		detailType string
		source     string
		detailKey  string
		detailVal  string
	}{
		{EventRequest{Kind: EventRebalance, InstanceID: id}, "EC2 Instance Rebalance Recommendation", "aws.ec2", "instance-id", id},
		{EventRequest{Kind: EventStateChange, InstanceID: id, State: "stopping"}, "EC2 Instance State-change Notification", "aws.ec2", "state", "stopping"},
		{EventRequest{Kind: EventHealth, InstanceID: id, StartTime: &start}, "AWS Health Event", "aws.health", "startTime", "Tue, 24 Nov 2026 10:00:00 GMT"},
		{EventRequest{Kind: EventCapacityReservationInterruption, InstanceID: id}, "EC2 Capacity Reservation Instance Interruption Warning",
			"aws.ec2", "instance-id", id},
	}
	for _, tc := range tests {
		t.Run(tc.req.Kind, func(t *testing.T) {
			body, err := e.sim.SendEvent(tc.req)
			if err != nil {
				t.Fatal(err)
			}
			var env struct {
				DetailType string         `json:"detail-type"`
				Source     string         `json:"source"`
				Detail     map[string]any `json:"detail"`
			}
			if err := json.Unmarshal([]byte(body), &env); err != nil {
				t.Fatal(err)
			}
			if env.DetailType != tc.detailType || env.Source != tc.source || env.Detail[tc.detailKey] != tc.detailVal {
				t.Errorf("event = %s", body)
			}
		})
	}
	if _, err := e.sim.SendEvent(EventRequest{Kind: "meteor", InstanceID: id}); err == nil {
		t.Error("unknown event kind accepted")
	}
}

func TestPricingGetProducts(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	f := func(field, value string) pricingtypes.Filter {
		return pricingtypes.Filter{Type: pricingtypes.FilterTypeTermMatch, Field: aws.String(field), Value: aws.String(value)}
	}
	p := pricing.NewGetProductsPaginator(e.price, &pricing.GetProductsInput{ServiceCode: aws.String("AmazonEC2"),
		Filters: []pricingtypes.Filter{f("regionCode", "us-west-2"), f("operatingSystem", "Linux"), f("tenancy", "Shared"),
			f("preInstalledSw", "NA"), f("capacitystatus", "Used")}})
	prices := map[string]string{}
	pages := 0
	for p.HasMorePages() {
		out, err := p.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		for _, item := range out.PriceList {
			var doc struct {
				Product struct {
					Attributes map[string]string `json:"attributes"`
				} `json:"product"`
				Terms struct {
					OnDemand map[string]struct {
						PriceDimensions map[string]struct {
							PricePerUnit map[string]string `json:"pricePerUnit"`
						} `json:"priceDimensions"`
					} `json:"OnDemand"`
				} `json:"terms"`
			}
			if err := json.Unmarshal([]byte(item), &doc); err != nil {
				t.Fatal(err)
			}
			for _, term := range doc.Terms.OnDemand {
				for _, dim := range term.PriceDimensions {
					prices[doc.Product.Attributes["instanceType"]] = dim.PricePerUnit["USD"]
				}
			}
		}
	}
	if pages < 5 || len(prices) < 500 || prices["m5.large"] != "0.0960000000" {
		t.Errorf("%d prices in %d pages, m5.large = %s", len(prices), pages, prices["m5.large"])
	}
	// Bare-metal sizes are also filed with dedicated tenancy under their own product family (Karpenter's query,
	// whose field names differ in case from the attributes: serviceCode, servicecode).
	metal, err := e.price.GetProducts(ctx, &pricing.GetProductsInput{ServiceCode: aws.String("AmazonEC2"),
		Filters: []pricingtypes.Filter{f("regionCode", "us-west-2"), f("tenancy", "Dedicated"), f("serviceCode", "AmazonEC2"),
			f("productFamily", "Compute Instance (bare metal)"), f("instanceType", "m5.metal")}})
	if err != nil || len(metal.PriceList) != 1 || !strings.Contains(metal.PriceList[0], `"USD":"`+prices["m5.metal"]+`"`) {
		t.Errorf("dedicated m5.metal = %v, %v; shared price %s", metal, err, prices["m5.metal"])
	}
	shared, err := e.price.GetProducts(ctx, &pricing.GetProductsInput{ServiceCode: aws.String("AmazonEC2"),
		Filters: []pricingtypes.Filter{f("regionCode", "us-west-2"), f("tenancy", "Dedicated"), f("instanceType", "m5.large")}})
	if err != nil || len(shared.PriceList) != 0 {
		t.Errorf("dedicated m5.large = %v, %v; want no product", shared, err)
	}
}

func TestEKSDescribeCluster(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	out, err := e.eks.DescribeCluster(ctx, &eks.DescribeClusterInput{Name: aws.String("dovetail")})
	if err != nil {
		t.Fatal(err)
	}
	c := out.Cluster
	ca, _ := base64.StdEncoding.DecodeString(aws.ToString(c.CertificateAuthority.Data))
	if aws.ToString(c.Endpoint) != "https://127.0.0.1:6443" || string(ca) != "CA" || aws.ToString(c.Version) != "1.34" ||
		string(c.Status) != "ACTIVE" || aws.ToString(c.KubernetesNetworkConfig.ServiceIpv4Cidr) != "10.100.0.0/16" ||
		string(c.KubernetesNetworkConfig.IpFamily) != "ipv4" {
		t.Errorf("cluster = %+v", c)
	}
	_, err = e.eks.DescribeCluster(ctx, &eks.DescribeClusterInput{Name: aws.String("other")})
	assertCode(t, err, "ResourceNotFoundException")
}

func TestThrottlingPerService(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.sim.SetFaults(Faults{Throttle: ThrottleFault{Rate: 1}})
	isThrottle := func(err error) bool {
		return retry.IsErrorThrottles(retry.DefaultThrottles).IsErrorThrottle(err).Bool()
	}
	_, err := e.ssm.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String("/x")})
	if !isThrottle(err) {
		t.Errorf("SSM: %v not throttling", err)
	}
	_, err = e.iam.GetInstanceProfile(ctx, &iam.GetInstanceProfileInput{InstanceProfileName: aws.String("x")})
	if !isThrottle(err) {
		t.Errorf("IAM: %v not throttling", err)
	}
	_, err = e.sqs.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String("dovetail")})
	if !isThrottle(err) {
		t.Errorf("SQS: %v not throttling", err)
	}
	_, err = e.eks.DescribeCluster(ctx, &eks.DescribeClusterInput{Name: aws.String("dovetail")})
	if !isThrottle(err) {
		t.Errorf("EKS: %v not throttling", err)
	}
}

func adminDo(t *testing.T, e *env, method, path string, in any) (int, []byte) {
	t.Helper()
	var body bytes.Buffer
	if in != nil {
		if err := json.NewEncoder(&body).Encode(in); err != nil {
			t.Fatal(err)
		}
	}
	req, err := http.NewRequest(method, e.srv.URL+"/_awssim/"+path, &body)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out bytes.Buffer
	_, _ = out.ReadFrom(resp.Body)
	return resp.StatusCode, out.Bytes()
}

func TestAdminAPI(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.launchTemplate(t, "lt-admin", "x86_64", "")
	id := launchOne(t, e, "lt-admin", "m5.large", "us-west-2a", ec2types.DefaultTargetCapacityTypeOnDemand)

	if code, body := adminDo(t, e, "POST", "faults/capacity", CapacityFault{InstanceType: "m5.*", Zone: "us-west-2b", CapacityType: "on-demand"}); code != 200 {
		t.Fatalf("capacity fault: %d %s", code, body)
	}
	out, err := e.ec2.CreateFleet(ctx, fleetInput("lt-admin", ec2types.DefaultTargetCapacityTypeOnDemand, override("m5.xlarge", e.subnetIDs(t)["us-west-2b"])))
	if err != nil || len(out.Instances) != 0 || len(out.Errors) != 1 || aws.ToString(out.Errors[0].ErrorCode) != "InsufficientInstanceCapacity" {
		t.Errorf("fleet under admin ICE = %+v, %v", out, err)
	}
	if code, body := adminDo(t, e, "POST", "faults/throttle", ThrottleFault{Rate: 2}); code != 400 {
		t.Errorf("throttle rate 2 accepted: %d %s", code, body)
	}
	if code, _ := adminDo(t, e, "POST", "faults/latency", map[string]string{"latency": "50ms"}); code != 200 {
		t.Error("latency fault rejected")
	}
	if f := e.sim.GetFaults(); time.Duration(f.Latency) != 50*time.Millisecond || len(f.Capacity) != 1 {
		t.Errorf("faults = %+v", f)
	}
	if code, _ := adminDo(t, e, "DELETE", "faults", nil); code != 200 {
		t.Error("clear failed")
	}
	if f := e.sim.GetFaults(); f.Latency != 0 || len(f.Capacity) != 0 {
		t.Errorf("faults after clear = %+v", f)
	}
	// Subnet IP exhaustion.
	if code, body := adminDo(t, e, "POST", "faults/subnet-ips", SubnetIPRequest{Zone: "us-west-2c", Available: 0}); code != 200 {
		t.Fatalf("subnet-ips: %d %s", code, body)
	}
	out, err = e.ec2.CreateFleet(ctx, fleetInput("lt-admin", ec2types.DefaultTargetCapacityTypeOnDemand, override("m5.large", e.subnetIDs(t)["us-west-2c"])))
	if err != nil || len(out.Errors) != 1 || aws.ToString(out.Errors[0].ErrorCode) != "InsufficientFreeAddressesInSubnet" {
		t.Errorf("fleet in exhausted subnet = %+v, %v", out, err)
	}
	// State dump and instance listing.
	code, body := adminDo(t, e, "GET", "state", nil)
	var st State
	if code != 200 || json.Unmarshal(body, &st) != nil || len(st.Instances) != 1 || st.Instances[0].ID != id ||
		st.Instances[0].Tags["karpenter.sh/nodepool"] != "default" || len(st.Accounts) != 1 {
		t.Errorf("state = %d %s", code, body)
	}
	// Events through the admin API.
	code, body = adminDo(t, e, "POST", "events", EventRequest{Kind: EventRebalance, InstanceID: id})
	if code != 200 || !strings.Contains(string(body), "Rebalance") {
		t.Errorf("event: %d %s", code, body)
	}
	if code, _ := adminDo(t, e, "POST", "events", EventRequest{Kind: EventRebalance, InstanceID: "i-missing"}); code != 400 {
		t.Errorf("event for a missing instance: %d", code)
	}
	// Out-of-band termination.
	e.advance(2 * time.Second)
	if code, body := adminDo(t, e, "POST", "instances/"+id+"/terminate", nil); code != 200 {
		t.Fatalf("terminate: %d %s", code, body)
	}
	if s := instanceByID(t, e, id).State; s != StateShuttingDown {
		t.Errorf("state after out-of-band terminate = %s", s)
	}
	if code, _ := adminDo(t, e, "POST", "instances/i-missing/terminate", nil); code != 404 {
		t.Errorf("terminate missing: %d", code)
	}
	if code, _ := adminDo(t, e, "GET", "nothing", nil); code != 404 {
		t.Errorf("unknown route: %d", code)
	}
}

func TestCapacityReservationsAndAMIRelease(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.launchTemplate(t, "lt-plain", "x86_64", "")
	crID, err := e.sim.AddCapacityReservation(CapacityReservationRequest{InstanceType: "m5.large", Zone: "us-west-2a", Count: 1})
	if err != nil {
		t.Fatal(err)
	}
	crs, err := e.ec2.DescribeCapacityReservations(ctx, &ec2.DescribeCapacityReservationsInput{})
	if err != nil || len(crs.CapacityReservations) != 1 || aws.ToInt32(crs.CapacityReservations[0].AvailableInstanceCount) != 1 ||
		aws.ToString(crs.CapacityReservations[0].CapacityReservationId) != crID {
		t.Fatalf("reservations = %+v, %v", crs, err)
	}
	param, err := e.ssm.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String("/aws/service/eks/optimized-ami/1.34/amazon-linux-2023/x86_64/standard/recommended/image_id")})
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.ec2.CreateLaunchTemplate(ctx, &ec2.CreateLaunchTemplateInput{LaunchTemplateName: aws.String("lt-reserved"),
		LaunchTemplateData: &ec2types.RequestLaunchTemplateData{ImageId: param.Parameter.Value,
			CapacityReservationSpecification: &ec2types.LaunchTemplateCapacityReservationSpecificationRequest{
				CapacityReservationTarget: &ec2types.CapacityReservationTarget{CapacityReservationId: aws.String(crID)}}}})
	if err != nil {
		t.Fatal(err)
	}
	id := launchOne(t, e, "lt-reserved", "m5.large", "us-west-2a", ec2types.DefaultTargetCapacityTypeOnDemand)
	desc, err := e.ec2.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{id}})
	if err != nil || aws.ToString(desc.Reservations[0].Instances[0].CapacityReservationId) != crID {
		t.Errorf("instance reservation = %+v, %v", desc, err)
	}
	out, err := e.ec2.CreateFleet(ctx, fleetInput("lt-reserved", ec2types.DefaultTargetCapacityTypeOnDemand, override("m5.large", e.subnetIDs(t)["us-west-2a"])))
	if err != nil || len(out.Errors) != 1 || aws.ToString(out.Errors[0].ErrorCode) != "ReservationCapacityExceeded" {
		t.Errorf("second launch into a full reservation = %+v, %v", out, err)
	}
	// AMI release moves the SSM parameter.
	e.sim.ReleaseAMIs()
	param2, err := e.ssm.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String("/aws/service/eks/optimized-ami/1.34/amazon-linux-2023/x86_64/standard/recommended/image_id")})
	if err != nil || aws.ToString(param2.Parameter.Value) == aws.ToString(param.Parameter.Value) || aws.ToInt64(&param2.Parameter.Version) < 2 {
		t.Errorf("parameter after release = %+v, %v", param2.Parameter, err)
	}
}

func TestRunInstances(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.launchTemplate(t, "lt-run", "x86_64", "")
	out, err := e.ec2.RunInstances(ctx, &ec2.RunInstancesInput{MinCount: aws.Int32(2), MaxCount: aws.Int32(2),
		LaunchTemplate: &ec2types.LaunchTemplateSpecification{LaunchTemplateName: aws.String("lt-run")},
		InstanceType:   ec2types.InstanceTypeC5Large, SubnetId: aws.String(e.subnetIDs(t)["us-west-2b"])})
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, i := range out.Instances {
		types = append(types, string(i.InstanceType)+"@"+aws.ToString(i.Placement.AvailabilityZone))
	}
	if d := cmp.Diff([]string{"c5.large@us-west-2b", "c5.large@us-west-2b"}, types); d != "" {
		t.Errorf("instances (-want +got):\n%s", d)
	}
}
