package tools

import "errors"

func (b builder) mcp() ([]Tool, error) { return nil, errors.New("todo") }
