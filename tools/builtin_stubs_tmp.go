package tools

import "errors"

func (b builder) http(fn *functionDoc) ([]Tool, error) { return nil, errors.New("todo") }
func (b builder) mcp() ([]Tool, error)                 { return nil, errors.New("todo") }
