// Package controllers lists every controller the operator runs and registers them with the manager.
package controllers

import (
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/dovetail/dovetail/pkg/controllers/capacitybuffer"
	clusteridentity "github.com/dovetail/dovetail/pkg/controllers/cluster/identity"
	"github.com/dovetail/dovetail/pkg/controllers/conditionmetrics"
	"github.com/dovetail/dovetail/pkg/controllers/deletioncost"
	"github.com/dovetail/dovetail/pkg/controllers/deps"
	"github.com/dovetail/dovetail/pkg/controllers/disruption"
	"github.com/dovetail/dovetail/pkg/controllers/interruption"
	"github.com/dovetail/dovetail/pkg/controllers/interruption/instancestatus"
	nodecapacity "github.com/dovetail/dovetail/pkg/controllers/node/capacity"
	nodehealth "github.com/dovetail/dovetail/pkg/controllers/node/health"
	nodemetrics "github.com/dovetail/dovetail/pkg/controllers/node/metrics"
	nodetermination "github.com/dovetail/dovetail/pkg/controllers/node/termination"
	"github.com/dovetail/dovetail/pkg/controllers/nodeclaim/capacityblock"
	"github.com/dovetail/dovetail/pkg/controllers/nodeclaim/capacitytype"
	"github.com/dovetail/dovetail/pkg/controllers/nodeclaim/consistency"
	nodeclaimdisruption "github.com/dovetail/dovetail/pkg/controllers/nodeclaim/disruption"
	"github.com/dovetail/dovetail/pkg/controllers/nodeclaim/garbagecollection"
	"github.com/dovetail/dovetail/pkg/controllers/nodeclaim/lifecycle"
	"github.com/dovetail/dovetail/pkg/controllers/nodeclaim/podevents"
	nodeclaimreboot "github.com/dovetail/dovetail/pkg/controllers/nodeclaim/reboot"
	nodeclaimtermination "github.com/dovetail/dovetail/pkg/controllers/nodeclaim/termination"
	nodeclasshash "github.com/dovetail/dovetail/pkg/controllers/nodeclass/hash"
	"github.com/dovetail/dovetail/pkg/controllers/nodeclass/instanceprofilegc"
	nodeclassstatus "github.com/dovetail/dovetail/pkg/controllers/nodeclass/status"
	"github.com/dovetail/dovetail/pkg/controllers/nodeoverlay"
	"github.com/dovetail/dovetail/pkg/controllers/nodepool/counter"
	"github.com/dovetail/dovetail/pkg/controllers/nodepool/hash"
	"github.com/dovetail/dovetail/pkg/controllers/nodepool/readiness"
	nodepoolstatic "github.com/dovetail/dovetail/pkg/controllers/nodepool/static"
	unavailableofferings "github.com/dovetail/dovetail/pkg/controllers/offerings/unavailable"
	"github.com/dovetail/dovetail/pkg/controllers/provisioning"
	"github.com/dovetail/dovetail/pkg/controllers/provisioning/podmetrics"
	conditionevents "github.com/dovetail/dovetail/pkg/controllers/status"
	"github.com/dovetail/dovetail/pkg/controllers/zonalshift"
	"github.com/dovetail/dovetail/pkg/settings"
)

// Registrar is what every controller package's Controller implements.
type Registrar interface {
	Register(ctx context.Context, m manager.Manager) error
}

// Named is a controller with its name, for error messages.
type Named struct {
	Name       string
	Controller Registrar
}

// New returns every controller, in registration order. Controllers behind a feature gate are included only when
// their gate is on.
func New(d deps.Deps) []Named {
	all := []Named{
		{provisioning.Name, provisioning.NewController(d.For(provisioning.Name))},
		{podmetrics.Name, podmetrics.NewController(d.For(podmetrics.Name))},
		{lifecycle.Name, lifecycle.NewController(d.For(lifecycle.Name))},
		{garbagecollection.Name, garbagecollection.NewController(d.For(garbagecollection.Name))},
		{hash.Name, hash.NewController(d.For(hash.Name))},
		{counter.Name, counter.NewController(d.For(counter.Name))},
		{nodemetrics.Name, nodemetrics.NewController(d.For(nodemetrics.Name))},
		// Memory capacity learned from registered Nodes, per instance type and AMI set (as Karpenter's AWS provider).
		{nodecapacity.Name, nodecapacity.NewController(d.For(nodecapacity.Name))},
		{conditionmetrics.Name, conditionmetrics.NewController(d.For(conditionmetrics.Name))},
		{readiness.Name, readiness.NewController(d.For(readiness.Name))},
		{nodeclaimtermination.Name, nodeclaimtermination.NewController(d.For(nodeclaimtermination.Name))},
		// Checks registered Nodes against their NodeClaims (ConsistentStateFound).
		{consistency.Name, consistency.NewController(d.For(consistency.Name))},
		// Carries out the reboots node repair asks for (RebootForRepair); always on, so a reboot in progress ends.
		{nodeclaimreboot.Name, nodeclaimreboot.NewController(d.For(nodeclaimreboot.Name))},
		// Announces condition transitions and removed finalizers of NodeClaims, NodePools, EC2NodeClasses and Nodes.
		{conditionevents.Name, conditionevents.NewController(d.For(conditionevents.Name))},
		{nodetermination.Name, nodetermination.NewController(d.For(nodetermination.Name))},
		{nodeclassstatus.Name, nodeclassstatus.NewController(d.For(nodeclassstatus.Name))},
		{nodeclasshash.Name, nodeclasshash.NewController(d.For(nodeclasshash.Name))},
		// The disruption signals (Drifted, Consolidatable, expiration, the last pod event) that the disruption
		// controller acts on.
		{podevents.Name, podevents.NewController(d.For(podevents.Name))},
		{nodeclaimdisruption.Name, nodeclaimdisruption.NewController(d.For(nodeclaimdisruption.Name))},
		{disruption.Name, disruption.NewController(d.For(disruption.Name))},
		// The interruption queue (a no-op when INTERRUPTION_QUEUE is empty).
		{interruption.Name, interruption.NewController(d.For(interruption.Name))},
		// EC2 instance status checks: replaces instances whose checks fail (always on, as in Karpenter).
		{instancestatus.Name, instancestatus.NewController(d.For(instancestatus.Name))},
		// Warns about other clusters using this cluster's name in the account (a no-op for providers that cannot tell).
		{clusteridentity.Name, clusteridentity.NewController(d.For(clusteridentity.Name))},
		// Publishes the offerings the cloud refused recently, for dovetailctl explain.
		{unavailableofferings.Name, unavailableofferings.NewController(d.For(unavailableofferings.Name))},
		// NodeOverlays: applied with the NodeOverlay gate on, reported as ignored with it off.
		{nodeoverlay.Name, nodeoverlay.NewController(d.For(nodeoverlay.Name))},
		// ARC zonal shifts (ENABLE_ZONAL_SHIFT=true; a no-op otherwise): NodePool events as zones shift and clear.
		{zonalshift.Name, zonalshift.NewController(d.For(zonalshift.Name))},
		// Reserved NodeClaims and Nodes whose capacity reservation ended become on-demand (always on, as in Karpenter).
		{capacitytype.Name, capacitytype.NewController(d.For(capacitytype.Name))},
		// Deletes the instance profiles made for node classes once nothing needs them (not with ISOLATED_VPC=true).
		{instanceprofilegc.Name, instanceprofilegc.NewController(d.For(instanceprofilegc.Name))},
	}
	if d.Settings != nil && d.Settings.FeatureEnabled(settings.FeatureNodeRepair) {
		// Legacy node repair (LEGACY_NODE_REPAIR): force-terminates nodes unhealthy past their toleration. Otherwise
		// node repair is a method of the disruption controller, and this controller repairs static NodePools' nodes.
		if d.Settings.LegacyNodeRepair {
			all = append(all, Named{nodehealth.Name, nodehealth.NewController(d.For(nodehealth.Name))})
		} else {
			all = append(all, Named{nodehealth.Name, nodehealth.NewStaticController(d.For(nodehealth.Name))})
		}
	}
	if d.Settings != nil && d.Settings.FeatureEnabled(settings.FeatureReservedCapacity) {
		// Reserved capacity: nodes in an ending Capacity Block are drained before EC2 reclaims it.
		all = append(all, Named{capacityblock.Name, capacityblock.NewController(d.For(capacityblock.Name))})
	}
	if d.Settings != nil && d.Settings.FeatureEnabled(settings.FeatureStaticCapacity) {
		// Static NodePools: keeps spec.replicas NodeClaims, whatever the pods.
		all = append(all, Named{nodepoolstatic.Name, nodepoolstatic.NewController(d.For(nodepoolstatic.Name))})
	}
	if d.Settings != nil && d.Settings.FeatureEnabled(settings.FeaturePodDeletionCostManagement) {
		// Pod deletion cost: ReplicaSets scale down the pods of the nodes disruption would take first.
		all = append(all, Named{deletioncost.Name, deletioncost.NewController(d.For(deletioncost.Name))})
	}
	if d.Settings != nil && d.Settings.FeatureEnabled(settings.FeatureCapacityBuffer) {
		// CapacityBuffers: resolves buffers into virtual pods the provisioner keeps room for.
		all = append(all, Named{capacitybuffer.Name, capacitybuffer.NewController(d.For(capacitybuffer.Name))})
	} else {
		// Buffers are ignored: says so once if any exist.
		all = append(all, Named{capacitybuffer.Name + ".disabled", capacitybuffer.NewDisabledNotice(d.For(capacitybuffer.Name))})
	}
	return all
}

// Register registers every controller from New with the manager.
func Register(ctx context.Context, m manager.Manager, d deps.Deps) error {
	for _, c := range New(d) {
		if err := c.Controller.Register(ctx, m); err != nil {
			return fmt.Errorf("registering controller %s: %w", c.Name, err)
		}
	}
	return nil
}
