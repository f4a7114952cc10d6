package resolve

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/log"

	awsv1 "github.com/dovetail/dovetail/api/aws/v1"
	"github.com/dovetail/dovetail/pkg/providers/aws/sdk"
)

// AliasParameter is one SSM parameter an AMI alias resolves through, with the requirements of the instance types
// the image is for.
type AliasParameter struct {
	Path         string
	Requirements []corev1.NodeSelectorRequirement
}

func archReq(kubeArch string) corev1.NodeSelectorRequirement {
	return corev1.NodeSelectorRequirement{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{kubeArch}}
}

func variantReqs(kubeArch, variant string) []corev1.NodeSelectorRequirement {
	reqs := []corev1.NodeSelectorRequirement{archReq(kubeArch)}
	switch variant {
	case "nvidia":
		reqs = append(reqs, corev1.NodeSelectorRequirement{Key: awsv1.LabelInstanceGPUManufacturer, Operator: corev1.NodeSelectorOpIn, Values: []string{"nvidia"}})
	case "neuron":
		reqs = append(reqs, corev1.NodeSelectorRequirement{Key: awsv1.LabelInstanceAcceleratorManufacturer, Operator: corev1.NodeSelectorOpIn, Values: []string{"aws"}})
	default:
		reqs = append(reqs,
			corev1.NodeSelectorRequirement{Key: awsv1.LabelInstanceGPUCount, Operator: corev1.NodeSelectorOpDoesNotExist},
			corev1.NodeSelectorRequirement{Key: awsv1.LabelInstanceAcceleratorCount, Operator: corev1.NodeSelectorOpDoesNotExist})
	}
	return reqs
}

// windowsReqs are the requirements an image of a Windows family adds: the Windows OS and its Server build.
func windowsReqs(family string) []corev1.NodeSelectorRequirement {
	build := awsv1.WindowsBuild(family)
	if build == "" {
		return nil
	}
	return []corev1.NodeSelectorRequirement{
		{Key: corev1.LabelOSStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"windows"}},
		{Key: corev1.LabelWindowsBuild, Operator: corev1.NodeSelectorOpIn, Values: []string{build}},
	}
}

func kubeArchOf(ec2Arch string) string {
	if ec2Arch == "arm64" {
		return "arm64"
	}
	return "amd64"
}

// AliasParameters returns the SSM parameters of an alias (family@version) for a Kubernetes version (e.g. 1.34).
func AliasParameters(alias, k8sVersion string) ([]AliasParameter, error) {
	fam, version, ok := awsv1.AliasFamilyAndVersion(alias)
	if !ok || fam == "" || version == "" {
		return nil, fmt.Errorf("AMI alias %q is not family@version", alias)
	}
	if k8sVersion == "" {
		return nil, fmt.Errorf("resolving AMI alias %q needs the cluster's Kubernetes version", alias)
	}
	latest := version == awsv1.AliasVersionLatest
	var out []AliasParameter
	add := func(path, ec2Arch, variant string) {
		out = append(out, AliasParameter{Path: path, Requirements: variantReqs(kubeArchOf(ec2Arch), variant)})
	}
	switch awsv1.AMIFamilyFromAlias(fam) {
	case awsv1.AMIFamilyAL2023:
		for _, v := range []struct{ arch, variant string }{{"x86_64", "standard"}, {"arm64", "standard"}, {"x86_64", "nvidia"}, {"arm64", "nvidia"}, {"x86_64", "neuron"}} {
			leaf := "recommended/image_id"
			if !latest {
				leaf = fmt.Sprintf("amazon-eks-node-al2023-%s-%s-%s-%s/image_id", v.arch, v.variant, k8sVersion, version)
			}
			add(fmt.Sprintf("/aws/service/eks/optimized-ami/%s/amazon-linux-2023/%s/%s/%s", k8sVersion, v.arch, v.variant, leaf), v.arch, v.variant)
		}
	case awsv1.AMIFamilyAL2:
		for _, v := range []struct{ suffix, arch, variant string }{{"", "x86_64", "standard"}, {"-arm64", "arm64", "standard"}, {"-gpu", "x86_64", "nvidia"}} {
			leaf := "recommended/image_id"
			if !latest {
				leaf = fmt.Sprintf("amazon-eks%s-node-%s-%s/image_id", v.suffix, k8sVersion, version)
			}
			add(fmt.Sprintf("/aws/service/eks/optimized-ami/%s/amazon-linux-2%s/%s", k8sVersion, v.suffix, leaf), v.arch, v.variant)
		}
	case awsv1.AMIFamilyBottlerocket:
		v := "latest"
		if !latest {
			v = strings.TrimPrefix(version, "v")
		}
		for _, x := range []struct{ suffix, arch, variant string }{{"", "x86_64", "standard"}, {"", "arm64", "standard"}, {"-nvidia", "x86_64", "nvidia"}, {"-nvidia", "arm64", "nvidia"}} {
			add(fmt.Sprintf("/aws/service/bottlerocket/aws-k8s-%s%s/%s/%s/image_id", k8sVersion, x.suffix, x.arch, v), x.arch, x.variant)
		}
	case awsv1.AMIFamilyWindows2019, awsv1.AMIFamilyWindows2022, awsv1.AMIFamilyWindows2025:
		if !latest {
			return nil, fmt.Errorf("AMI alias %q: Windows aliases support only @latest", alias)
		}
		family := awsv1.AMIFamilyFromAlias(fam)
		year := strings.TrimPrefix(family, "Windows")
		out = append(out, AliasParameter{
			Path:         fmt.Sprintf("/aws/service/ami-windows-latest/Windows_Server-%s-English-Core-EKS_Optimized-%s/image_id", year, k8sVersion),
			Requirements: append([]corev1.NodeSelectorRequirement{archReq("amd64")}, windowsReqs(family)...),
		})
	default:
		return nil, fmt.Errorf("AMI alias %q: unknown family %q (want al2, al2023, bottlerocket, windows2019, windows2022 or windows2025)", alias, fam)
	}
	return out, nil
}

// image is a candidate AMI before selection.
type image struct {
	ami     awsv1.AMI
	created time.Time
}

// AMIs resolves the node class's amiSelectorTerms for the cluster's Kubernetes version. For each distinct set of
// requirements (architecture, GPU variant) it keeps the newest image, preferring non-deprecated ones.
func (r *Resolver) AMIs(ctx context.Context, nc *awsv1.EC2NodeClass, k8sVersion string) ([]awsv1.AMI, error) {
	var described []string
	var candidates []image
	for _, t := range nc.Spec.AMISelectorTerms {
		described = append(described, describeTerm(t.Tags, "alias", t.Alias, "id", t.ID, "name", t.Name, "owner", t.Owner, "ssmParameter", t.SSMParameter))
		var imgs []image
		var err error
		switch {
		case t.Alias != "":
			imgs, err = r.aliasImages(ctx, t.Alias, k8sVersion)
		case t.SSMParameter != "" && t.ID == "":
			imgs, err = r.ssmImages(ctx, t.SSMParameter, nc.AMIFamily())
		default:
			imgs, err = r.selectedImages(ctx, t, nc.AMIFamily())
		}
		if err != nil {
			return nil, err
		}
		candidates = append(candidates, imgs...)
	}
	out := newestPerRequirements(candidates)
	if len(out) == 0 {
		terms := describeTerms(described)
		if nc.Alias() != "" {
			terms += fmt.Sprintf(" for Kubernetes %s", k8sVersion)
		}
		return nil, &NoMatchError{What: "AMIs", Field: "amiSelectorTerms", Terms: terms}
	}
	return out, nil
}

func (r *Resolver) aliasImages(ctx context.Context, alias, k8sVersion string) ([]image, error) {
	params, err := AliasParameters(alias, k8sVersion)
	if err != nil {
		return nil, err
	}
	_, version, _ := awsv1.AliasFamilyAndVersion(alias)
	latest := version == awsv1.AliasVersionLatest
	imgs, stale, err := r.aliasImagesOnce(ctx, alias, params, latest)
	if err != nil || !stale {
		return imgs, err
	}
	// A remembered "latest" parameter named an AMI that is now deprecated: AWS has released its successor, so the
	// parameters are read again rather than kept for the rest of their day.
	log.FromContext(ctx).Info("AMI alias named a deprecated AMI; reading its SSM parameters again", "alias", alias)
	imgs, _, err = r.aliasImagesOnce(ctx, alias, params, latest)
	return imgs, err
}

// aliasImagesOnce resolves the alias's parameters (remembered values first) to images. stale reports that a
// remembered "latest" value named a deprecated image; those values have been forgotten.
func (r *Resolver) aliasImagesOnce(ctx context.Context, alias string, params []AliasParameter, latest bool) ([]image, bool, error) {
	reqsByID := map[string][][]corev1.NodeSelectorRequirement{}
	var ids []string
	cached := map[string]bool{}
	for _, p := range params {
		id, hit, err := r.aliasParameter(ctx, p.Path, latest)
		if err != nil {
			if sdk.IsNotFound(err) {
				log.FromContext(ctx).V(1).Info("AMI alias parameter not found", "alias", alias, "parameter", p.Path)
				continue
			}
			return nil, false, err
		}
		if hit {
			cached[id] = true
		}
		if _, seen := reqsByID[id]; !seen {
			ids = append(ids, id)
		}
		reqsByID[id] = append(reqsByID[id], p.Requirements)
	}
	if len(ids) == 0 {
		return nil, false, nil
	}
	described, err := r.describeImages(ctx, &ec2.DescribeImagesInput{Filters: []ec2types.Filter{filter("image-id", ids...)}})
	if err != nil {
		return nil, false, err
	}
	byID := map[string]ec2types.Image{}
	for _, img := range described {
		byID[aws.ToString(img.ImageId)] = img
	}
	now := r.clock.Now()
	if latest {
		deprecated := map[string]bool{}
		for _, id := range ids {
			if img, ok := byID[id]; ok && cached[id] && toImage(img, nil, now).ami.Deprecated {
				deprecated[id] = true
			}
		}
		if len(deprecated) > 0 && r.params.forgetLatest(deprecated) > 0 {
			return nil, true, nil
		}
	}
	var out []image
	for _, id := range ids {
		img, ok := byID[id]
		if !ok {
			// SSM named an image DescribeImages does not show (shared from another account); use it anyway.
			img = ec2types.Image{ImageId: aws.String(id)}
		}
		for _, reqs := range reqsByID[id] {
			out = append(out, toImage(img, reqs, now))
		}
	}
	return out, false, nil
}

// aliasParameter returns the value of an alias's SSM parameter, remembered for AliasParameterTTL; hit reports
// that the remembered value was used.
func (r *Resolver) aliasParameter(ctx context.Context, name string, latest bool) (value string, hit bool, err error) {
	now := r.clock.Now()
	if v, ok := r.params.get(name, now); ok {
		return v, true, nil
	}
	v, err := r.parameter(ctx, name)
	if err != nil {
		return "", false, err
	}
	r.params.set(name, paramEntry{value: v, expires: now.Add(AliasParameterTTL), latest: latest})
	log.FromContext(ctx).Info("discovered SSM parameter", "parameter", name, "value", v)
	return v, false, nil
}

func (r *Resolver) ssmImages(ctx context.Context, name, family string) ([]image, error) {
	id, err := r.customParameter(ctx, name)
	if err != nil {
		if sdk.IsNotFound(err) {
			return nil, nil
		}
		return nil, err
	}
	imgs, err := r.describeImages(ctx, &ec2.DescribeImagesInput{Filters: []ec2types.Filter{filter("image-id", id)}})
	if err != nil {
		return nil, err
	}
	return imagesWithArch(imgs, family, r.clock.Now()), nil
}

func (r *Resolver) selectedImages(ctx context.Context, t awsv1.AMISelectorTerm, family string) ([]image, error) {
	in := &ec2.DescribeImagesInput{IncludeDeprecated: aws.Bool(true)}
	switch {
	case t.ID != "":
		in.Filters = []ec2types.Filter{filter("image-id", t.ID)}
	default:
		in.Filters = tagFilters(t.Tags)
		if t.Name != "" {
			in.Filters = append(in.Filters, filter("name", t.Name))
		}
		switch {
		case t.Owner != "":
			in.Owners = []string{t.Owner}
		case t.Name != "":
			in.Owners = []string{"self", "amazon"}
		}
	}
	imgs, err := r.describeImages(ctx, in)
	if err != nil {
		return nil, err
	}
	return imagesWithArch(imgs, family, r.clock.Now()), nil
}

func imagesWithArch(imgs []ec2types.Image, family string, now time.Time) []image {
	out := make([]image, 0, len(imgs))
	for _, img := range imgs {
		reqs := []corev1.NodeSelectorRequirement{archReq(kubeArchOf(string(img.Architecture)))}
		reqs = append(reqs, windowsReqs(family)...)
		out = append(out, toImage(img, reqs, now))
	}
	return out
}

// customParameter returns the value of an SSM parameter an amiSelectorTerm names, remembered for
// CustomParameterTTL.
func (r *Resolver) customParameter(ctx context.Context, name string) (string, error) {
	now := r.clock.Now()
	if v, ok := r.params.get(name, now); ok {
		return v, nil
	}
	v, err := r.parameter(ctx, name)
	if err != nil {
		return "", err
	}
	r.params.set(name, paramEntry{value: v, expires: now.Add(CustomParameterTTL)})
	return v, nil
}

func (r *Resolver) parameter(ctx context.Context, name string) (string, error) {
	out, err := r.ssm.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String(name)})
	if err != nil {
		return "", sdk.Wrap(err, "getting SSM parameter %s", name)
	}
	if out.Parameter == nil || aws.ToString(out.Parameter.Value) == "" {
		return "", fmt.Errorf("SSM parameter %s has no value", name)
	}
	return aws.ToString(out.Parameter.Value), nil
}

func (r *Resolver) describeImages(ctx context.Context, in *ec2.DescribeImagesInput) ([]ec2types.Image, error) {
	var out []ec2types.Image
	pager := ec2.NewDescribeImagesPaginator(r.ec2, in)
	for pager.HasMorePages() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			if sdk.IsNotFound(err) {
				return out, nil
			}
			return nil, sdk.Wrap(err, "describing images")
		}
		for _, img := range page.Images {
			if img.State != "" && img.State != ec2types.ImageStateAvailable {
				continue
			}
			out = append(out, img)
		}
	}
	return out, nil
}

func toImage(img ec2types.Image, reqs []corev1.NodeSelectorRequirement, now time.Time) image {
	created, _ := time.Parse(time.RFC3339, aws.ToString(img.CreationDate))
	deprecated := false
	if d := aws.ToString(img.DeprecationTime); d != "" {
		if t, err := time.Parse(time.RFC3339, d); err == nil && !t.After(now) {
			deprecated = true
		}
	}
	return image{
		ami:     awsv1.AMI{ID: aws.ToString(img.ImageId), Name: aws.ToString(img.Name), Requirements: reqs, Deprecated: deprecated},
		created: created,
	}
}

// newestPerRequirements keeps, for each distinct requirement set, the newest non-deprecated image (or the newest
// deprecated one when no other exists), sorted by requirement set.
func newestPerRequirements(imgs []image) []awsv1.AMI {
	sort.SliceStable(imgs, func(i, j int) bool {
		a, b := imgs[i], imgs[j]
		if a.ami.Deprecated != b.ami.Deprecated {
			return !a.ami.Deprecated
		}
		if !a.created.Equal(b.created) {
			return a.created.After(b.created)
		}
		return a.ami.ID < b.ami.ID
	})
	seen := map[string]bool{}
	var out []awsv1.AMI
	for _, img := range imgs {
		k := requirementsKey(img.ami.Requirements)
		if seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, img.ami)
	}
	sort.SliceStable(out, func(i, j int) bool {
		return requirementsKey(out[i].Requirements) < requirementsKey(out[j].Requirements)
	})
	return out
}

func requirementsKey(reqs []corev1.NodeSelectorRequirement) string {
	parts := make([]string, 0, len(reqs))
	for _, r := range reqs {
		parts = append(parts, fmt.Sprintf("%s %s %s", r.Key, r.Operator, strings.Join(r.Values, ",")))
	}
	sort.Strings(parts)
	return strings.Join(parts, ";")
}

// IsNoMatch reports whether err says selector terms matched nothing.
func IsNoMatch(err error) bool {
	var e *NoMatchError
	return errors.As(err, &e)
}
