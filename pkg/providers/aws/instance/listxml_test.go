package instance

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/google/go-cmp/cmp"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/dovetail/dovetail/pkg/providers/aws/sdk"
	"github.com/dovetail/dovetail/pkg/providers/aws/tags"
	"github.com/dovetail/dovetail/pkg/providers/aws/unavailable"
	awssim "github.com/dovetail/dovetail/pkg/simulator/aws"
)

// cannedEC2 answers every call with one status and body, and counts the calls.
type cannedEC2 struct {
	status int
	bodies []string // one a call; the last repeats
	calls  int
}

func (c *cannedEC2) Do(req *http.Request) (*http.Response, error) {
	body := c.bodies[min(c.calls, len(c.bodies)-1)]
	c.calls++
	return &http.Response{StatusCode: c.status, Header: http.Header{"Content-Type": {"text/xml;charset=UTF-8"}},
		Body: io.NopCloser(strings.NewReader(body)), ContentLength: int64(len(body)), Request: req}, nil
}

func cannedClient(h aws.HTTPClient) *ec2.Client {
	return ec2.New(ec2.Options{Region: "us-west-2", BaseEndpoint: aws.String("http://ec2.test"), HTTPClient: h,
		Credentials: credentials.NewStaticCredentialsProvider("AKID", "secret", ""), RetryMaxAttempts: 1})
}

// sdkInstances decodes a DescribeInstances answer with the SDK alone.
func sdkInstances(t *testing.T, body string) ([]*Instance, string) {
	t.Helper()
	out, err := cannedClient(&cannedEC2{status: 200, bodies: []string{body}}).DescribeInstances(context.Background(), &ec2.DescribeInstancesInput{})
	if err != nil {
		t.Fatalf("the SDK's decoder: %v", err)
	}
	var insts []*Instance
	for _, r := range out.Reservations {
		for _, i := range r.Instances {
			insts = append(insts, convert(i))
		}
	}
	return insts, aws.ToString(out.NextToken)
}

// leanInstances decodes it through leanDecoder, as List does, and reports whether leanDecoder read it.
func leanInstances(t *testing.T, body string) ([]*Instance, string, bool) {
	t.Helper()
	d := &leanDecoder{}
	out, err := cannedClient(&cannedEC2{status: 200, bodies: []string{body}}).DescribeInstances(context.Background(), &ec2.DescribeInstancesInput{}, withLeanDecoder(d))
	if err != nil {
		t.Fatalf("through leanDecoder: %v", err)
	}
	var insts []*Instance
	for _, i := range pageInstances(d, out) {
		insts = append(insts, convert(i))
	}
	return insts, aws.ToString(out.NextToken), d.decoded
}

const answerHead = `<?xml version="1.0" encoding="UTF-8"?>
<DescribeInstancesResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15/">
    <requestId>8f7724cf-496f-496e-8fe3-example</requestId>
`

// fullInstance is an instance with every field a listing keeps and many it does not, as EC2 writes them, groupSet
// and tagSet items also inside the fields a listing skips.
const fullInstance = `<item>
  <instanceId>i-1234567890abcdef0</instanceId>
  <imageId>ami-0abcdef1234567890</imageId>
  <instanceState><code>16</code><name>running</name></instanceState>
  <privateDnsName>ip-10-0-0-157.us-west-2.compute.internal</privateDnsName>
  <dnsName/>
  <reason/>
  <amiLaunchIndex>0</amiLaunchIndex>
  <productCodes/>
  <instanceType>m5.xlarge</instanceType>
  <launchTime>2026-11-23T09:00:00.000Z</launchTime>
  <placement>
    <availabilityZone>us-west-2b</availabilityZone>
    <groupName>pg-1</groupName>
    <groupId>pg-0123456789abcdef0</groupId>
    <partitionNumber>3</partitionNumber>
    <tenancy>default</tenancy>
  </placement>
  <monitoring><state>disabled</state></monitoring>
  <subnetId>subnet-0123456789abcdef0</subnetId>
  <vpcId>vpc-0123456789abcdef0</vpcId>
  <privateIpAddress>10.0.0.157</privateIpAddress>
  <groupSet>
    <item><groupId>sg-0b</groupId><groupName>nodes</groupName></item>
    <item><groupId>sg-0a</groupId><groupName>cluster &amp; nodes</groupName></item>
  </groupSet>
  <stateReason><code>pending</code><message>pending</message></stateReason>
  <architecture>x86_64</architecture>
  <rootDeviceType>ebs</rootDeviceType>
  <blockDeviceMapping>
    <item><deviceName>/dev/xvda</deviceName><ebs><volumeId>vol-1</volumeId><status>attached</status>
      <attachTime>2026-11-23T09:00:01.000Z</attachTime><deleteOnTermination>true</deleteOnTermination></ebs></item>
  </blockDeviceMapping>
  <instanceLifecycle>spot</instanceLifecycle>
  <spotInstanceRequestId>sir-1</spotInstanceRequestId>
  <capacityReservationId>cr-0123456789abcdef0</capacityReservationId>
  <tagSet>
    <item><key>karpenter.sh/nodepool</key><value>default</value></item>
    <item><key>Name</key><value>a &lt;node&gt; &quot;named&quot; &apos;so&apos; &#233;&#x2603;</value></item>
    <item><key>empty</key><value/></item>
    <item><key><![CDATA[kept <as> &is;]]></key><value>x&amp;y</value></item>
    <!-- a comment -->
  </tagSet>
  <networkInterfaceSet>
    <item><networkInterfaceId>eni-1</networkInterfaceId>
      <groupSet><item><groupId>sg-eni-only</groupId><groupName>eni</groupName></item></groupSet>
      <tagSet><item><key>eni-tag</key><value>not the instance's</value></item></tagSet>
    </item>
  </networkInterfaceSet>
  <metadataOptions><state>applied</state><httpTokens>required</httpTokens></metadataOptions>
</item>`

// TestDecodeInstancesPageMatchesTheSDK: what leanDecoder reads of an answer is what convert makes of the SDK's
// decoding of it, with the same NextToken.
func TestDecodeInstancesPageMatchesTheSDK(t *testing.T) {
	cases := []struct {
		name string
		body string
	}{
		{"every kept field and many others", answerHead + `<reservationSet><item><reservationId>r-1</reservationId><ownerId>123456789012</ownerId>
			<groupSet><item><groupId>sg-reservation</groupId></item></groupSet><instancesSet>` + fullInstance + `</instancesSet></item></reservationSet>
			<nextToken>eyJ2IjoiMiIsImMiOiJ&amp;+/=</nextToken></DescribeInstancesResponse>`},
		{"instances of two reservations, the bare minimum", answerHead + `<reservationSet>
			<item><instancesSet><item><instanceId>i-a</instanceId></item><item><instanceId>i-b</instanceId><instanceState><name>pending</name></instanceState></item></instancesSet></item>
			<item><instancesSet><item><instanceId>i-c</instanceId><tagSet/><groupSet></groupSet></item></instancesSet></item>
			</reservationSet></DescribeInstancesResponse>`},
		{"no instance", answerHead + `<reservationSet/></DescribeInstancesResponse>`},
		{"no reservationSet at all", answerHead + `</DescribeInstancesResponse>`},
		{"single quotes and a '>' in an attribute, whitespace in tags", `<?xml version='1.0'?><DescribeInstancesResponse xmlns='http://ec2.amazonaws.com/doc/2016-11-15/' a="x>y"
			><reservationSet ><item><instancesSet><item><instanceId >i-d</instanceId ><subnetId>subnet-1</subnetId></item></instancesSet></item></reservationSet></DescribeInstancesResponse >`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			want, wantToken := sdkInstances(t, tc.body)
			got, gotToken, decoded := leanInstances(t, tc.body)
			if !decoded {
				t.Fatal("leanDecoder did not read the answer")
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("instances (-SDK +leanDecoder):\n%s", diff)
			}
			if gotToken != wantToken {
				t.Errorf("NextToken %q, the SDK's %q", gotToken, wantToken)
			}
		})
	}
	// The full instance, read as intended (not only as the SDK reads it).
	got, _, _ := leanInstances(t, cases[0].body)
	want := &Instance{ID: "i-1234567890abcdef0", Type: "m5.xlarge", Zone: "us-west-2b", SubnetID: "subnet-0123456789abcdef0",
		ImageID: "ami-0abcdef1234567890", CapacityType: "spot", State: "running", LaunchTime: time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC),
		PrivateDNSName: "ip-10-0-0-157.us-west-2.compute.internal", SecurityGroupIDs: []string{"sg-0a", "sg-0b"},
		Tags:             map[string]string{"karpenter.sh/nodepool": "default", "Name": `a <node> "named" 'so' é☃`, "empty": "", "kept <as> &is;": "x&y"},
		PlacementGroupID: "pg-0123456789abcdef0", PlacementPartition: 3}
	if diff := cmp.Diff([]*Instance{want}, got); diff != "" {
		t.Errorf("the full instance (-want +got):\n%s", diff)
	}
}

// TestDecodeInstancesPageLeavesTheRestToTheSDK: an answer leanDecoder cannot read is decoded by the SDK as it came,
// an error answer is the SDK's error, and leanDecoder never returns fewer instances than the answer holds.
func TestDecodeInstancesPageLeavesTheRestToTheSDK(t *testing.T) {
	for _, tc := range []struct {
		name string
		body string
		want []string // instance IDs the listing returns (the SDK reads names by their local part)
	}{
		{"a document type declaration", `<?xml version="1.0"?><!DOCTYPE DescribeInstancesResponse><DescribeInstancesResponse><reservationSet><item><instancesSet><item><instanceId>i-a</instanceId></item></instancesSet></item></reservationSet></DescribeInstancesResponse>`, []string{"i-a"}},
		{"prefixed names", `<ec2:DescribeInstancesResponse xmlns:ec2="http://ec2.amazonaws.com/doc/2016-11-15/"><ec2:reservationSet><ec2:item><ec2:instancesSet><ec2:item><ec2:instanceId>i-b</ec2:instanceId></ec2:item></ec2:instancesSet></ec2:item></ec2:reservationSet></ec2:DescribeInstancesResponse>`, []string{"i-b"}},
		{"an instance's fields prefixed", `<DescribeInstancesResponse xmlns:ec2="x"><reservationSet><item><instancesSet><item><ec2:instanceId>i-c</ec2:instanceId></item></instancesSet></item></reservationSet></DescribeInstancesResponse>`, []string{"i-c"}},
		{"an unknown entity", `<DescribeInstancesResponse><reservationSet><item><instancesSet><item><instanceId>i-&nbsp;</instanceId></item></instancesSet></item></reservationSet></DescribeInstancesResponse>`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := decodeInstancesPage([]byte(tc.body)); !errors.Is(err, errXML) {
				t.Fatalf("decodeInstancesPage: %v, want errXML", err)
			}
			d := &leanDecoder{}
			out, err := cannedClient(&cannedEC2{status: 200, bodies: []string{tc.body}}).DescribeInstances(context.Background(), &ec2.DescribeInstancesInput{}, withLeanDecoder(d))
			if d.decoded {
				t.Fatal("leanDecoder read an answer it should have left to the SDK")
			}
			sdkOut, sdkErr := cannedClient(&cannedEC2{status: 200, bodies: []string{tc.body}}).DescribeInstances(context.Background(), &ec2.DescribeInstancesInput{})
			if (err == nil) != (sdkErr == nil) {
				t.Fatalf("error %v, the SDK's alone %v", err, sdkErr)
			}
			if err != nil {
				return
			}
			var ids, sdkIDs []string
			for _, i := range pageInstances(d, out) {
				ids = append(ids, aws.ToString(i.InstanceId))
			}
			for _, i := range pageInstances(&leanDecoder{}, sdkOut) {
				sdkIDs = append(sdkIDs, aws.ToString(i.InstanceId))
			}
			if diff := cmp.Diff(sdkIDs, ids); diff != "" {
				t.Errorf("instance IDs (-SDK alone +with leanDecoder):\n%s", diff)
			}
			if diff := cmp.Diff(tc.want, ids); diff != "" {
				t.Errorf("instance IDs (-want +got):\n%s", diff)
			}
		})
	}
	t.Run("an error answer", func(t *testing.T) {
		body := `<?xml version="1.0" encoding="UTF-8"?><Response><Errors><Error><Code>UnauthorizedOperation</Code><Message>You are not authorized.</Message></Error></Errors><RequestID>r</RequestID></Response>`
		clk := clocktesting.NewFakeClock(time.Now())
		p := NewProvider(cannedClient(&cannedEC2{status: 403, bodies: []string{body}}), tags.Cluster{Name: "c", UID: "u"}, unavailable.New(clk, unavailable.DefaultTTL), clk, BatchWindow{})
		_, err := p.List(context.Background())
		if got := sdk.ErrorCode(err); got != "UnauthorizedOperation" {
			t.Fatalf("List: %v (code %q), want UnauthorizedOperation", err, got)
		}
	})
}

// TestDecodeInstancesPageRefusesBrokenXML: a malformed answer is an error, never a shorter listing.
func TestDecodeInstancesPageRefusesBrokenXML(t *testing.T) {
	inst := `<item><instanceId>i-a</instanceId></item>`
	for name, body := range map[string]string{
		"unclosed root":             `<DescribeInstancesResponse><reservationSet><item><instancesSet>` + inst + `</instancesSet></item></reservationSet>`,
		"mismatched end tag":        `<DescribeInstancesResponse><reservationSet><item><instancesSet>` + inst + `</instancesSet></reservationSet></item></DescribeInstancesResponse>`,
		"truncated":                 `<DescribeInstancesResponse><reservationSet><item><instancesSet><item><instanceId>i-a</inst`,
		"two roots":                 `<DescribeInstancesResponse></DescribeInstancesResponse><DescribeInstancesResponse></DescribeInstancesResponse>`,
		"another root":              `<DescribeInstanceStatusResponse></DescribeInstanceStatusResponse>`,
		"no root":                   `<?xml version="1.0"?>`,
		"an instance without ID":    `<DescribeInstancesResponse><reservationSet><item><instancesSet><item><imageId>ami-1</imageId></item></instancesSet></item></reservationSet></DescribeInstancesResponse>`,
		"an empty instance":         `<DescribeInstancesResponse><reservationSet><item><instancesSet><item/></instancesSet></item></reservationSet></DescribeInstancesResponse>`,
		"a bad launch time":         `<DescribeInstancesResponse><reservationSet><item><instancesSet><item><instanceId>i-a</instanceId><launchTime>yesterday</launchTime></item></instancesSet></item></reservationSet></DescribeInstancesResponse>`,
		"a NUL":                     "<DescribeInstancesResponse><reservationSet><item><instancesSet><item><instanceId>i-\x00</instanceId></item></instancesSet></item></reservationSet></DescribeInstancesResponse>",
		"an unterminated reference": `<DescribeInstancesResponse><reservationSet><item><instancesSet><item><instanceId>i-&amp</instanceId></item></instancesSet></item></reservationSet></DescribeInstancesResponse>`,
		"an unterminated comment":   `<DescribeInstancesResponse><!-- </DescribeInstancesResponse>`,
		"text after the root":       `<DescribeInstancesResponse></DescribeInstancesResponse>trailing`,
	} {
		t.Run(name, func(t *testing.T) {
			if page, err := decodeInstancesPage([]byte(body)); !errors.Is(err, errXML) {
				t.Fatalf("decodeInstancesPage: %+v, %v; want errXML", page, err)
			}
		})
	}
}

// FuzzDecodeInstancesPage: whatever the answer, decodeInstancesPage returns an error or instances each with an ID,
// and never panics; an answer the SDK reads without error and leanDecoder reads gives the same instances.
func FuzzDecodeInstancesPage(f *testing.F) {
	f.Add(answerHead + `<reservationSet><item><instancesSet>` + fullInstance + `</instancesSet></item></reservationSet><nextToken>t</nextToken></DescribeInstancesResponse>`)
	f.Add(`<DescribeInstancesResponse><reservationSet><item><instancesSet><item><instanceId>i-&#x41;<![CDATA[b]]></instanceId></item></instancesSet></item></reservationSet></DescribeInstancesResponse>`)
	f.Fuzz(func(t *testing.T, body string) {
		page, err := decodeInstancesPage([]byte(body))
		if err != nil {
			return
		}
		for _, i := range page.instances {
			if i.InstanceId == nil {
				t.Fatalf("an instance without ID from %q", body)
			}
		}
	})
}

// TestListThroughTheSimulator: List reads the simulator's answers (the XML it writes for EC2) as the SDK does, over
// several pages, and with fewer allocations.
func TestListThroughTheSimulator(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC))
	sim, err := awssim.New(awssim.Options{Clock: clk, ClusterCA: []byte("CA"), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(sim)
	defer srv.Close()
	rec := &recordingClient{next: sdk.NewHTTPClient(srv.Client())}
	api := ec2.New(ec2.Options{Region: "us-west-2", BaseEndpoint: aws.String(srv.URL), HTTPClient: rec,
		Credentials: credentials.NewStaticCredentialsProvider("AKIDACCOUNTA", "secret", ""), RetryMaxAttempts: 1})
	ctx := context.Background()
	images, err := api.DescribeImages(ctx, &ec2.DescribeImagesInput{})
	if err != nil || len(images.Images) == 0 {
		t.Fatalf("DescribeImages: %v", err)
	}
	cluster := tags.Cluster{Name: "c", UID: "u"}
	const n = ListPageSize + 37
	for launched := 0; launched < n; launched += 100 {
		count := aws.Int32(int32(min(100, n-launched)))
		instanceTags := []ec2types.Tag{{Key: aws.String(cluster.ClusterTag()), Value: aws.String("owned")}, {Key: aws.String(tags.ClusterUID), Value: aws.String("u")},
			{Key: aws.String("karpenter.sh/nodepool"), Value: aws.String("default")}, {Key: aws.String("Name"), Value: aws.String(fmt.Sprintf("a <b> & \"c\" %d", launched))}}
		if _, err := api.RunInstances(ctx, &ec2.RunInstancesInput{MinCount: count, MaxCount: count, ImageId: images.Images[0].ImageId,
			InstanceType: ec2types.InstanceTypeM5Large, TagSpecifications: []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeInstance, Tags: instanceTags}}}); err != nil {
			t.Fatal(err)
		}
	}
	p := NewProvider(api, cluster, unavailable.New(clk, unavailable.DefaultTTL), clk, BatchWindow{})
	rec.bodies = nil
	got, err := p.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != n || len(rec.bodies) != 2 {
		t.Fatalf("listed %d instances in %d pages, want %d in 2", len(got), len(rec.bodies), n)
	}
	var want []*Instance
	for _, body := range rec.bodies {
		insts, _ := sdkInstances(t, string(body))
		want = append(want, insts...)
	}
	slices.SortFunc(want, func(a, b *Instance) int { return strings.Compare(a.ID, b.ID) })
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("List (-the SDK's decoding +List):\n%s", diff)
	}
}

// recordingClient keeps the bodies of the answers.
type recordingClient struct {
	next   aws.HTTPClient
	bodies [][]byte
}

func (c *recordingClient) Do(req *http.Request) (*http.Response, error) {
	resp, err := c.next.Do(req)
	if err != nil {
		return nil, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	c.bodies = append(c.bodies, body)
	resp.Body = io.NopCloser(bytes.NewReader(body))
	return resp, nil
}

// BenchmarkListDecode decodes a page of 1,000 of the simulator's instances with the SDK alone and through
// leanDecoder.
func BenchmarkListDecode(b *testing.B) {
	var inst strings.Builder
	for i := range ListPageSize {
		inst.WriteString(strings.Replace(fullInstance, "i-1234567890abcdef0", fmt.Sprintf("i-%017d", i), 1))
	}
	body := answerHead + `<reservationSet><item><instancesSet>` + inst.String() + `</instancesSet></item></reservationSet></DescribeInstancesResponse>`
	for _, lean := range []bool{false, true} {
		b.Run(map[bool]string{false: "sdk", true: "lean"}[lean], func(b *testing.B) {
			api := cannedClient(&cannedEC2{status: 200, bodies: []string{body}})
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				d := &leanDecoder{}
				var opts []func(*ec2.Options)
				if lean {
					opts = append(opts, withLeanDecoder(d))
				}
				out, err := api.DescribeInstances(context.Background(), &ec2.DescribeInstancesInput{}, opts...)
				if err != nil {
					b.Fatal(err)
				}
				if n := len(pageInstances(d, out)); n != ListPageSize {
					b.Fatalf("%d instances", n)
				}
			}
		})
	}
}
