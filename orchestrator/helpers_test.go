package orchestrator

import "github.com/toolrl/toolrl/traj"

func toolResult(content string) traj.ToolResult { return traj.ToolResult{OK: true, Content: content} }
