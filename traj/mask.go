package traj

import (
	"encoding/json"
	"fmt"
)

// Mask is a per-token 0/1 mask. It is a named type so that JSON writes it as an
// array of numbers, as trainers expect, instead of encoding/json's base64 for []byte.
type Mask []uint8

// MarshalJSON writes the mask as a JSON array of 0/1 numbers.
func (m Mask) MarshalJSON() ([]byte, error) {
	if m == nil {
		return []byte("null"), nil
	}
	out := make([]byte, 0, 2*len(m)+2)
	out = append(out, '[')
	for i, v := range m {
		if i > 0 {
			out = append(out, ',')
		}
		if v > 9 {
			return nil, fmt.Errorf("mask value %d at %d is not 0 or 1", v, i)
		}
		out = append(out, '0'+v)
	}
	return append(out, ']'), nil
}

// UnmarshalJSON reads a JSON array of small non-negative numbers.
func (m *Mask) UnmarshalJSON(data []byte) error {
	var values []uint8
	if err := json.Unmarshal(data, &values); err != nil {
		return err
	}
	*m = values
	return nil
}
