package main

import (
	"os"

	"github.com/spf13/cobra"

	"github.com/dovetail/dovetail/pkg/cli/clidoc"
)

const defaultEndpoint = "http://127.0.0.1:4566"

func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:           "awssim",
		Short:         "Local AWS simulator for Dovetail (EC2, IAM, SSM, Pricing, SQS, EKS on one endpoint)",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	endpoint := os.Getenv("AWSSIM_ENDPOINT")
	if endpoint == "" {
		endpoint = defaultEndpoint
	}
	c := &client{}
	root.PersistentFlags().StringVar(&c.endpoint, "endpoint", endpoint,
		"simulator URL used by the client subcommands (env AWSSIM_ENDPOINT)")
	root.AddCommand(newServeCommand(), newFaultCommand(c), newSQSCommand(c), newInstancesCommand(c),
		newTerminateCommand(c), newInstanceStatusCommand(c), newKubernetesVersionCommand(c), newStateCommand(c),
		newReservationCommand(c), newAMICommand(c), newSpotPriceCommand(c), newCallsCommand(c), clidoc.NewCommand())
	return root
}
