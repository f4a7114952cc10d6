package instance

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/smithy-go/middleware"
	smithytime "github.com/aws/smithy-go/time"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// A listing of the cluster's instances (garbage collection's, every 2 minutes) reads a few fields of each
// instance, but the SDK decodes all of them: at 1,000 instances a page, about 600 allocations and 20 KB of
// garbage an instance, and most of a listing's CPU. listedPage decodes a page of DescribeInstances itself, keeping
// only the fields convert reads, and hands the SDK an answer with the page's NextToken and no instances, so the
// SDK still signs, retries, paginates and reports errors as for any call. A body it cannot read is left to the
// SDK's decoder, as it came.

// listedFields are the instance fields a listing keeps (what convert reads).
const listedFields = "instanceId, imageId, instanceState/name, privateDnsName, instanceType, launchTime, placement/" +
	"{availabilityZone, groupId, partitionNumber}, subnetId, instanceLifecycle, capacityReservationId, " +
	"groupSet/item/groupId, tagSet/item/{key, value}"

// listedPage is a DescribeInstances page decoded by leanDecoder.
type listedPage struct {
	instances []ec2types.Instance
	nextToken string
}

// leanDecoder is a deserialize-step middleware between the SDK's deserializer and the transport: it decodes a
// successful DescribeInstances answer into page and gives the SDK's deserializer an answer without instances.
type leanDecoder struct {
	page    *listedPage
	decoded bool
}

func (*leanDecoder) ID() string { return "dovetail/LeanDescribeInstances" }

func (d *leanDecoder) HandleDeserialize(ctx context.Context, in middleware.DeserializeInput, next middleware.DeserializeHandler) (
	middleware.DeserializeOutput, middleware.Metadata, error) {
	out, md, err := next.HandleDeserialize(ctx, in)
	if err != nil {
		return out, md, err
	}
	resp, ok := out.RawResponse.(*smithyhttp.Response)
	if !ok || resp.StatusCode < 200 || resp.StatusCode >= 300 || resp.Body == nil {
		return out, md, err
	}
	var buf bytes.Buffer
	if resp.ContentLength > 0 && resp.ContentLength < 1<<30 {
		buf.Grow(int(resp.ContentLength) + bytes.MinRead) // read in one piece, not doubled
	}
	_, rerr := buf.ReadFrom(resp.Body)
	resp.Body.Close()
	body := buf.Bytes()
	if rerr != nil {
		// The SDK's deserializer reports what it reads: the part read, then the error.
		resp.Body = io.NopCloser(io.MultiReader(bytes.NewReader(body), errorReader{rerr}))
		return out, md, err
	}
	page, perr := decodeInstancesPage(body)
	if perr != nil {
		resp.Body = io.NopCloser(bytes.NewReader(body))
		return out, md, err
	}
	d.page, d.decoded = page, true
	var stub strings.Builder
	stub.WriteString(`<DescribeInstancesResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15/">`)
	if page.nextToken != "" {
		stub.WriteString("<nextToken>")
		_ = xml.EscapeText(&stub, []byte(page.nextToken)) // a strings.Builder does not fail
		stub.WriteString("</nextToken>")
	}
	stub.WriteString("<reservationSet></reservationSet></DescribeInstancesResponse>")
	resp.Body = io.NopCloser(strings.NewReader(stub.String()))
	return out, md, err
}

type errorReader struct{ err error }

func (r errorReader) Read([]byte) (int, error) { return 0, r.err }

// withLeanDecoder returns the option that installs d on one DescribeInstances call.
func withLeanDecoder(d *leanDecoder) func(*ec2.Options) {
	return func(o *ec2.Options) {
		o.APIOptions = append(o.APIOptions, func(stack *middleware.Stack) error {
			return stack.Deserialize.Insert(d, "OperationDeserializer", middleware.After)
		})
	}
}

// EachListed calls fn with each instance of every page of the DescribeInstances listing in, decoded by
// leanDecoder: only the fields of listedFields are set (all of them when the SDK decoded a page leanDecoder could
// not read). The listings of the cluster's instances use it; a caller that reads other fields describes the
// instance on its own.
func EachListed(ctx context.Context, api ec2.DescribeInstancesAPIClient, in *ec2.DescribeInstancesInput, fn func(ec2types.Instance)) error {
	pager := ec2.NewDescribeInstancesPaginator(api, in)
	for pager.HasMorePages() {
		lean := &leanDecoder{}
		page, err := pager.NextPage(ctx, withLeanDecoder(lean))
		if err != nil {
			return err
		}
		for _, i := range pageInstances(lean, page) {
			fn(i)
		}
	}
	return nil
}

// pageInstances returns the instances of a page: those leanDecoder decoded, or the SDK's.
func pageInstances(d *leanDecoder, page *ec2.DescribeInstancesOutput) []ec2types.Instance {
	if d.decoded {
		return d.page.instances
	}
	var out []ec2types.Instance
	for _, r := range page.Reservations {
		out = append(out, r.Instances...)
	}
	return out
}

// xmlNode is where the decoder stands in a DescribeInstances answer.
type xmlNode uint8

const (
	nodeOther        xmlNode = iota // an element whose content is not kept
	nodeDocument                    // outside the root element
	nodeRoot                        // DescribeInstancesResponse
	nodeReservations                // reservationSet
	nodeReservation                 // reservationSet/item
	nodeInstances                   // reservationSet/item/instancesSet
	nodeInstance                    // instancesSet/item
	nodeState                       // instance/instanceState
	nodePlacement                   // instance/placement
	nodeGroups                      // instance/groupSet
	nodeGroup                       // instance/groupSet/item
	nodeTags                        // instance/tagSet
	nodeTag                         // instance/tagSet/item
	nodeText                        // a kept text field (xmlFrame.field says which)
)

// xmlField is a kept text field.
type xmlField uint8

const (
	fieldNone xmlField = iota
	fieldNextToken
	fieldInstanceID
	fieldImageID
	fieldStateName
	fieldPrivateDNSName
	fieldInstanceType
	fieldLaunchTime
	fieldZone
	fieldPlacementGroupID
	fieldPartition
	fieldSubnetID
	fieldLifecycle
	fieldCapacityReservationID
	fieldGroupID
	fieldTagKey
	fieldTagValue
)

// child returns the node and field of an element named name inside node n.
func child(n xmlNode, name []byte) (xmlNode, xmlField) {
	s := string(name) // compared only: no allocation
	switch n {
	case nodeDocument:
		return nodeRoot, fieldNone
	case nodeRoot:
		switch s {
		case "reservationSet":
			return nodeReservations, fieldNone
		case "nextToken":
			return nodeText, fieldNextToken
		}
	case nodeReservations:
		if s == "item" {
			return nodeReservation, fieldNone
		}
	case nodeReservation:
		if s == "instancesSet" {
			return nodeInstances, fieldNone
		}
	case nodeInstances:
		if s == "item" {
			return nodeInstance, fieldNone
		}
	case nodeInstance:
		switch s {
		case "instanceId":
			return nodeText, fieldInstanceID
		case "imageId":
			return nodeText, fieldImageID
		case "instanceState":
			return nodeState, fieldNone
		case "privateDnsName":
			return nodeText, fieldPrivateDNSName
		case "instanceType":
			return nodeText, fieldInstanceType
		case "launchTime":
			return nodeText, fieldLaunchTime
		case "placement":
			return nodePlacement, fieldNone
		case "subnetId":
			return nodeText, fieldSubnetID
		case "instanceLifecycle":
			return nodeText, fieldLifecycle
		case "capacityReservationId":
			return nodeText, fieldCapacityReservationID
		case "groupSet":
			return nodeGroups, fieldNone
		case "tagSet":
			return nodeTags, fieldNone
		}
	case nodeState:
		if s == "name" {
			return nodeText, fieldStateName
		}
	case nodePlacement:
		switch s {
		case "availabilityZone":
			return nodeText, fieldZone
		case "groupId":
			return nodeText, fieldPlacementGroupID
		case "partitionNumber":
			return nodeText, fieldPartition
		}
	case nodeGroups:
		if s == "item" {
			return nodeGroup, fieldNone
		}
	case nodeGroup:
		if s == "groupId" {
			return nodeText, fieldGroupID
		}
	case nodeTags:
		if s == "item" {
			return nodeTag, fieldNone
		}
	case nodeTag:
		switch s {
		case "key":
			return nodeText, fieldTagKey
		case "value":
			return nodeText, fieldTagValue
		}
	}
	return nodeOther, fieldNone
}

type xmlFrame struct {
	name  []byte
	node  xmlNode
	field xmlField
}

// errXML is a body decodeInstancesPage cannot read.
var errXML = errors.New("not a DescribeInstances answer it can read")

// decodeInstancesPage reads a DescribeInstances answer: the listedFields of each instance and the NextToken. It
// accepts the XML EC2 writes (elements without namespace prefixes, text with the five predefined and numeric
// character references, CDATA sections, comments, processing instructions, attributes) and refuses anything
// else, such as a document type declaration, a prefixed name or unbalanced tags.
func decodeInstancesPage(body []byte) (*listedPage, error) {
	page := &listedPage{}
	stack := []xmlFrame{{node: nodeDocument}}
	rootSeen := false
	var text []byte // the text of the current kept field
	var tag *ec2types.Tag
	inst := func() *ec2types.Instance { return &page.instances[len(page.instances)-1] }
	for i := 0; i < len(body); {
		lt := bytes.IndexByte(body[i:], '<')
		if lt < 0 {
			if len(bytes.TrimSpace(body[i:])) > 0 {
				return nil, fmt.Errorf("%w: text after the root element", errXML)
			}
			break
		}
		if top := stack[len(stack)-1]; top.node == nodeText && lt > 0 {
			if bytes.IndexByte(body[i:i+lt], cdataMark) >= 0 {
				return nil, fmt.Errorf("%w: a NUL character", errXML)
			}
			text = append(text, body[i:i+lt]...)
		}
		i += lt
		rest := body[i:]
		switch {
		case bytes.HasPrefix(rest, []byte("<?")):
			end := bytes.Index(rest, []byte("?>"))
			if end < 0 {
				return nil, fmt.Errorf("%w: unterminated processing instruction", errXML)
			}
			i += end + 2
		case bytes.HasPrefix(rest, []byte("<!--")):
			end := bytes.Index(rest[4:], []byte("-->"))
			if end < 0 {
				return nil, fmt.Errorf("%w: unterminated comment", errXML)
			}
			i += 4 + end + 3
		case bytes.HasPrefix(rest, []byte("<![CDATA[")):
			end := bytes.Index(rest[9:], []byte("]]>"))
			if end < 0 {
				return nil, fmt.Errorf("%w: unterminated CDATA section", errXML)
			}
			if stack[len(stack)-1].node == nodeText {
				// Kept as is: appendCDATA marks it for unescape to leave alone.
				text = appendCDATA(text, rest[9:9+end])
			}
			i += 9 + end + 3
		case bytes.HasPrefix(rest, []byte("<!")):
			return nil, fmt.Errorf("%w: declaration %.20q", errXML, rest)
		case bytes.HasPrefix(rest, []byte("</")):
			end := bytes.IndexByte(rest, '>')
			if end < 0 || len(stack) == 1 {
				return nil, fmt.Errorf("%w: unbalanced end tag", errXML)
			}
			name := bytes.TrimRight(rest[2:end], " \t\r\n")
			top := stack[len(stack)-1]
			if !bytes.Equal(name, top.name) {
				return nil, fmt.Errorf("%w: end tag %q closes %q", errXML, name, top.name)
			}
			if top.node == nodeText {
				v, err := unescape(text)
				if err != nil {
					return nil, err
				}
				if err := setField(page, inst, tag, top.field, v); err != nil {
					return nil, err
				}
				text = text[:0]
			}
			switch top.node {
			case nodeTag:
				tag = nil
			case nodeInstance:
				// A field of another name (a namespace prefix, a renamed element) would go unseen: an instance
				// without its ID is not read here at all.
				if inst().InstanceId == nil {
					return nil, fmt.Errorf("%w: an instance without instanceId", errXML)
				}
			}
			stack = stack[:len(stack)-1]
			i += end + 1
		default:
			end, selfClosing, err := tagEnd(rest)
			if err != nil {
				return nil, err
			}
			inner := rest[1:end]
			if selfClosing {
				inner = inner[:len(inner)-1]
			}
			nameEnd := bytes.IndexAny(inner, " \t\r\n")
			if nameEnd < 0 {
				nameEnd = len(inner)
			}
			name := inner[:nameEnd]
			if len(name) == 0 {
				return nil, fmt.Errorf("%w: an element without a name", errXML)
			}
			if bytes.IndexByte(name, ':') >= 0 {
				// The SDK reads a name by its local part; these names are compared whole, so a prefixed one (EC2
				// writes none) would be skipped: the SDK reads the answer instead.
				return nil, fmt.Errorf("%w: prefixed element %q", errXML, name)
			}
			parent := stack[len(stack)-1]
			if len(stack) == 1 {
				if rootSeen {
					return nil, fmt.Errorf("%w: a second root element", errXML)
				}
				if string(name) != "DescribeInstancesResponse" {
					return nil, fmt.Errorf("%w: root element %q", errXML, name)
				}
				rootSeen = true
			}
			node, field := nodeOther, fieldNone
			if parent.node != nodeOther && parent.node != nodeText {
				node, field = child(parent.node, name)
			}
			switch node {
			case nodeInstance:
				page.instances = append(page.instances, ec2types.Instance{})
			case nodeTag:
				in := inst()
				in.Tags = append(in.Tags, ec2types.Tag{})
				tag = &in.Tags[len(in.Tags)-1]
			case nodeText:
				text = text[:0]
			}
			if selfClosing {
				if node == nodeInstance {
					return nil, fmt.Errorf("%w: an instance without instanceId", errXML)
				}
				if node == nodeText {
					if err := setField(page, inst, tag, field, ""); err != nil {
						return nil, err
					}
				}
				if node == nodeTag {
					tag = nil
				}
			} else {
				stack = append(stack, xmlFrame{name: name, node: node, field: field})
			}
			i += end + 1
		}
	}
	if len(stack) != 1 {
		return nil, fmt.Errorf("%w: %d elements left open", errXML, len(stack)-1)
	}
	if !rootSeen {
		return nil, fmt.Errorf("%w: no root element", errXML)
	}
	return page, nil
}

// tagEnd returns the index of the '>' ending the start tag at the start of b (quoted attribute values may hold
// '>'), and whether the tag closes itself.
func tagEnd(b []byte) (int, bool, error) {
	var quote byte
	for j := 1; j < len(b); j++ {
		c := b[j]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '"' || c == '\'':
			quote = c
		case c == '>':
			return j, b[j-1] == '/', nil
		case c == '<':
			return 0, false, fmt.Errorf("%w: '<' inside a tag", errXML)
		}
	}
	return 0, false, fmt.Errorf("%w: unterminated tag", errXML)
}

// cdataMark opens and closes a CDATA section's text in a field's collected text (a byte no XML text holds).
const cdataMark = 0

func appendCDATA(text, data []byte) []byte {
	text = append(text, cdataMark)
	text = append(text, data...)
	return append(text, cdataMark)
}

// unescape returns text with its character references replaced (but inside CDATA sections).
func unescape(text []byte) (string, error) {
	if bytes.IndexByte(text, '&') < 0 && bytes.IndexByte(text, cdataMark) < 0 {
		return string(text), nil
	}
	var b strings.Builder
	for i := 0; i < len(text); i++ {
		c := text[i]
		switch c {
		case cdataMark:
			end := bytes.IndexByte(text[i+1:], cdataMark)
			if end < 0 {
				return "", fmt.Errorf("%w: a NUL character", errXML)
			}
			b.Write(text[i+1 : i+1+end])
			i += end + 1
		case '&':
			semi := bytes.IndexByte(text[i:], ';')
			if semi < 0 {
				return "", fmt.Errorf("%w: unterminated character reference", errXML)
			}
			ref := string(text[i+1 : i+semi])
			switch ref {
			case "amp":
				b.WriteByte('&')
			case "lt":
				b.WriteByte('<')
			case "gt":
				b.WriteByte('>')
			case "quot":
				b.WriteByte('"')
			case "apos":
				b.WriteByte('\'')
			default:
				var r uint64
				var err error
				switch {
				case strings.HasPrefix(ref, "#x"):
					r, err = strconv.ParseUint(ref[2:], 16, 32)
				case strings.HasPrefix(ref, "#"):
					r, err = strconv.ParseUint(ref[1:], 10, 32)
				default:
					err = errXML
				}
				if err != nil {
					return "", fmt.Errorf("%w: character reference &%s;", errXML, ref)
				}
				b.WriteRune(rune(r))
			}
			i += semi
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), nil
}

// setField stores a kept field's text.
func setField(page *listedPage, inst func() *ec2types.Instance, tag *ec2types.Tag, f xmlField, v string) error {
	switch f {
	case fieldNextToken:
		page.nextToken = v
		return nil
	case fieldTagKey:
		if tag != nil {
			tag.Key = aws.String(v)
		}
		return nil
	case fieldTagValue:
		if tag != nil {
			tag.Value = aws.String(v)
		}
		return nil
	}
	in := inst()
	switch f {
	case fieldInstanceID:
		in.InstanceId = aws.String(v)
	case fieldImageID:
		in.ImageId = aws.String(v)
	case fieldStateName:
		if in.State == nil {
			in.State = &ec2types.InstanceState{}
		}
		in.State.Name = ec2types.InstanceStateName(v)
	case fieldPrivateDNSName:
		in.PrivateDnsName = aws.String(v)
	case fieldInstanceType:
		in.InstanceType = ec2types.InstanceType(v)
	case fieldLaunchTime:
		t, err := smithytime.ParseDateTime(v)
		if err != nil {
			return fmt.Errorf("%w: launchTime %q: %w", errXML, v, err)
		}
		in.LaunchTime = aws.Time(t)
	case fieldZone:
		placement(in).AvailabilityZone = aws.String(v)
	case fieldPlacementGroupID:
		placement(in).GroupId = aws.String(v)
	case fieldPartition:
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 32)
		if err != nil {
			return fmt.Errorf("%w: partitionNumber %q", errXML, v)
		}
		placement(in).PartitionNumber = aws.Int32(int32(n))
	case fieldSubnetID:
		in.SubnetId = aws.String(v)
	case fieldLifecycle:
		in.InstanceLifecycle = ec2types.InstanceLifecycleType(v)
	case fieldCapacityReservationID:
		in.CapacityReservationId = aws.String(v)
	case fieldGroupID:
		in.SecurityGroups = append(in.SecurityGroups, ec2types.GroupIdentifier{GroupId: aws.String(v)})
	}
	return nil
}

func placement(in *ec2types.Instance) *ec2types.Placement {
	if in.Placement == nil {
		in.Placement = &ec2types.Placement{}
	}
	return in.Placement
}
