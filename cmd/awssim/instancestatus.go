package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	awssim "github.com/dovetail/dovetail/pkg/simulator/aws"
)

func newInstanceStatusCommand(c *client) *cobra.Command {
	var instanceStatus, systemStatus, since string
	var events []string
	cmd := &cobra.Command{
		Use:   "instance-status INSTANCE_ID...",
		Short: "Set the status checks and scheduled events DescribeInstanceStatus reports for instances",
		Long: "Set the status checks and scheduled events DescribeInstanceStatus reports for instances. Each call " +
			"replaces what an earlier one set: with no flags the instances are healthy again.",
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			req := awssim.InstanceStatusRequest{InstanceStatus: instanceStatus, SystemStatus: systemStatus}
			if since != "" {
				d, err := time.ParseDuration(since)
				if err != nil {
					return fmt.Errorf("--since %q: %w", since, err)
				}
				t := time.Now().Add(-d).UTC()
				req.ImpairedSince = &t
			}
			for _, code := range events {
				req.Events = append(req.Events, awssim.ScheduledEventRequest{Code: code})
			}
			for _, id := range args {
				if err := c.do("POST", "instances/"+id+"/status", req, nil); err != nil {
					return err
				}
				fmt.Fprintln(cmd.OutOrStdout(), "status set for", id)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&instanceStatus, "instance-status", "", "ok or impaired (the instance reachability check fails)")
	f.StringVar(&systemStatus, "system-status", "", "ok or impaired (the system reachability check fails)")
	f.StringVar(&since, "since", "", "how long ago the failing checks started failing (default: now)")
	f.StringSliceVar(&events, "event", nil, "scheduled event codes: instance-reboot, system-reboot, system-maintenance, instance-retirement, instance-stop")
	return cmd
}

func newKubernetesVersionCommand(c *client) *cobra.Command {
	return &cobra.Command{
		Use:   "kubernetes-version VERSION",
		Short: "Upgrade the simulated control plane: EKS DescribeCluster answers VERSION and its AMIs are published",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := c.do("POST", "kubernetes-version", map[string]string{"version": args[0]}, nil); err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), "kubernetes version", args[0])
			return nil
		},
	}
}
