// Package overlay applies NodeOverlays (karpenter.sh/v1alpha1) to instance types: it decides which overlays
// apply (runtime validation and Karpenter's conflict rules) and rewrites the prices and capacities of the
// instance types they select. It is a pure decision core: no client, no clock; the nodeoverlay controller feeds
// it and the cloud provider wrapper (Wrap) serves its result to every user of GetInstanceTypes.
package overlay
