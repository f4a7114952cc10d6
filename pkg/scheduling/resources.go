package scheduling

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Fixed resource dimensions; extended resources follow in the order Dims assigns.
const (
	dimCPU = iota // millicores
	dimMemory
	dimPods
	dimEphemeral
	numFixedDims
)

// Dims maps resource names to positions in Vec. One Dims is built per solve from every resource name in the
// snapshot, so vectors are fixed-length int64 slices and arithmetic on them does not allocate.
type Dims struct {
	names []corev1.ResourceName
	index map[corev1.ResourceName]int
}

// NewDims returns the fixed dimensions plus the given extended resources (sorted).
func NewDims(extended ...corev1.ResourceName) *Dims {
	d := &Dims{
		names: []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourcePods, corev1.ResourceEphemeralStorage},
		index: map[corev1.ResourceName]int{},
	}
	sort.Slice(extended, func(i, j int) bool { return extended[i] < extended[j] })
	for _, n := range extended {
		if _, ok := d.index[n]; ok || isFixed(n) {
			continue
		}
		d.names = append(d.names, n)
	}
	for i, n := range d.names {
		d.index[n] = i
	}
	return d
}

func isFixed(n corev1.ResourceName) bool {
	return n == corev1.ResourceCPU || n == corev1.ResourceMemory || n == corev1.ResourcePods || n == corev1.ResourceEphemeralStorage
}

// Len returns the number of dimensions.
func (d *Dims) Len() int { return len(d.names) }

// Name returns the resource name of dimension i.
func (d *Dims) Name(i int) corev1.ResourceName { return d.names[i] }

// Vec is a resource vector laid out by a Dims: cpu in millicores, everything else in base units.
type Vec []int64

// Zero returns an all-zero vector.
func (d *Dims) Zero() Vec { return make(Vec, len(d.names)) }

// FromList converts a ResourceList; names unknown to d are reported so the caller can fail clearly.
func (d *Dims) FromList(l corev1.ResourceList) (Vec, []corev1.ResourceName) {
	v := d.Zero()
	var unknown []corev1.ResourceName
	for n, q := range l {
		i, ok := d.index[n]
		if !ok {
			if q.IsZero() {
				continue
			}
			unknown = append(unknown, n)
			continue
		}
		v[i] = quantityValue(i, q)
	}
	return v, unknown
}

// MustFromList is FromList for lists whose names were registered when d was built.
func (d *Dims) MustFromList(l corev1.ResourceList) Vec {
	v, _ := d.FromList(l)
	return v
}

func quantityValue(dim int, q resource.Quantity) int64 {
	if dim == dimCPU {
		return q.MilliValue()
	}
	return q.Value()
}

// ToList converts back to a ResourceList, omitting zero extended resources.
func (d *Dims) ToList(v Vec) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i, x := range v {
		if x == 0 && i >= numFixedDims {
			continue
		}
		switch i {
		case dimCPU:
			out[d.names[i]] = *resource.NewMilliQuantity(x, resource.DecimalSI)
		case dimMemory, dimEphemeral:
			out[d.names[i]] = *resource.NewQuantity(x, resource.BinarySI)
		default:
			out[d.names[i]] = *resource.NewQuantity(x, resource.DecimalSI)
		}
	}
	return out
}

// Format renders v for messages, e.g. "cpu=1500m memory=2Gi pods=3".
func (d *Dims) Format(v Vec) string {
	parts := make([]string, 0, len(v))
	for i, x := range v {
		if x == 0 {
			continue
		}
		parts = append(parts, d.FormatOne(i, x))
	}
	return strings.Join(parts, " ")
}

// FormatOne renders one dimension's value with its name.
func (d *Dims) FormatOne(i int, x int64) string {
	return fmt.Sprintf("%s=%s", d.names[i], d.FormatValue(i, x))
}

// FormatValue renders one dimension's value without its name (cpu in cores, memory in binary units).
func (d *Dims) FormatValue(i int, x int64) string {
	switch i {
	case dimCPU:
		q := resource.NewMilliQuantity(x, resource.DecimalSI)
		return q.String()
	case dimMemory, dimEphemeral:
		return formatBytes(x)
	default:
		return fmt.Sprintf("%d", x)
	}
}

func formatBytes(x int64) string {
	const gi, mi = 1 << 30, 1 << 20
	switch {
	case x%gi == 0:
		return fmt.Sprintf("%dGi", x/gi)
	case x >= gi:
		return fmt.Sprintf("%.1fGi", float64(x)/gi)
	case x%mi == 0:
		return fmt.Sprintf("%dMi", x/mi)
	default:
		return fmt.Sprintf("%d", x)
	}
}

// Add adds o into v.
func (v Vec) Add(o Vec) {
	for i := range v {
		v[i] += o[i]
	}
}

// AddScaled adds n*o into v.
func (v Vec) AddScaled(o Vec, n int64) {
	for i := range v {
		v[i] += o[i] * n
	}
}

// Sub subtracts o from v.
func (v Vec) Sub(o Vec) {
	for i := range v {
		v[i] -= o[i]
	}
}

// Clone copies v.
func (v Vec) Clone() Vec { return append(Vec(nil), v...) }

// Fits reports whether used+req <= capacity in every dimension.
func Fits(used, req, capacity Vec) bool {
	for i := range req {
		if used[i]+req[i] > capacity[i] {
			return false
		}
	}
	return true
}

// LessEq reports whether v <= o in every dimension.
func (v Vec) LessEq(o Vec) bool {
	for i := range v {
		if v[i] > o[i] {
			return false
		}
	}
	return true
}

// MaxInto sets v to the element-wise maximum of v and o.
func (v Vec) MaxInto(o Vec) {
	for i := range v {
		if o[i] > v[i] {
			v[i] = o[i]
		}
	}
}

// HowMany returns how many copies of req fit in capacity-used (capped at limit).
func HowMany(used, req, capacity Vec, limit int) int {
	n := limit
	for i := range req {
		if req[i] <= 0 {
			if used[i] > capacity[i] {
				return 0
			}
			continue
		}
		free := capacity[i] - used[i]
		if free < 0 {
			return 0
		}
		if k := free / req[i]; k < int64(n) {
			n = int(k)
		}
	}
	return n
}

// PodRequests returns the resources the kube-scheduler reserves for the pod: the larger of the regular containers
// (plus restartable init containers) and the peak of the init sequence, plus pod overhead; pods=1. A container
// with limits but no requests counts its limits, as API defaulting would.
func PodRequests(pod *corev1.Pod) corev1.ResourceList {
	sum := corev1.ResourceList{}
	for i := range pod.Spec.Containers {
		addList(sum, containerRequests(&pod.Spec.Containers[i]))
	}
	sidecars := corev1.ResourceList{}
	initPeak := corev1.ResourceList{}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		req := containerRequests(c)
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			addList(sidecars, req)
			maxList(initPeak, sidecars)
			continue
		}
		step := sidecars.DeepCopy()
		addList(step, req)
		maxList(initPeak, step)
	}
	addList(sum, sidecars)
	maxList(sum, initPeak)
	addList(sum, pod.Spec.Overhead)
	sum[corev1.ResourcePods] = *resource.NewQuantity(1, resource.DecimalSI)
	return sum
}

func containerRequests(c *corev1.Container) corev1.ResourceList {
	out := corev1.ResourceList{}
	for n, q := range c.Resources.Limits {
		out[n] = q
	}
	for n, q := range c.Resources.Requests {
		out[n] = q
	}
	return out
}

func addList(dst, src corev1.ResourceList) {
	for n, q := range src {
		s := dst[n]
		s.Add(q)
		dst[n] = s
	}
}

func maxList(dst, src corev1.ResourceList) {
	for n, q := range src {
		if s, ok := dst[n]; !ok || q.Cmp(s) > 0 {
			dst[n] = q.DeepCopy()
		}
	}
}
