package main

import "github.com/spf13/cobra"

// commands lists the subcommands; each lives in its own file.
func (a *app) commands() []*cobra.Command {
	return []*cobra.Command{
		a.newJudgeCmd(),
		a.newPolicyCmd(),
	}
}
