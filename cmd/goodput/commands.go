package main

import (
	"time"

	"github.com/spf13/cobra"
)

// commands lists the subcommands; each lives in its own file.
func (a *app) commands() []*cobra.Command {
	return []*cobra.Command{
		a.newJudgeCmd(),
		a.newWatchCmd(),
		a.newServeCmd(),
		a.newCapacityCmd(),
		a.newReviewCmdWith(reviewOptions{now: time.Now, judge: a.reviewJudge, gitUser: gitUserName}),
		a.newCommentCmd(),
		a.newSimulateCmd(),
		a.newCalibrateCmd(),
		a.newBenchCmd(),
		a.newPolicyCmd(),
		a.newPersistenceCmd(),
	}
}
