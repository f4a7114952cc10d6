// Package capacitybuffer is the pure core of CapacityBuffers (autoscaling.x-k8s.io/v1beta1): from a buffer and
// the pod shape it names (a PodTemplate, or a workload's template and replica count) it computes how many buffer
// pods to keep room for, the status to report, and the virtual pods the provisioner places. Virtual pods live
// only inside scheduling simulations; they are never created in the API server. No client-go here.
package capacitybuffer
