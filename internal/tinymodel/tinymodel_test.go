package tinymodel

import (
	"fmt"
	"testing"

	"github.com/toolrl/toolrl/model/llama"
)

// Every family shape writes a folder whose config.json loads back with the
// family's features (what other packages' tests rely on).
func TestWriteShapeFamilies(t *testing.T) {
	for _, shape := range FamilyShapes {
		dir := WriteShape(t, shape, 1, nil)
		cfg, err := llama.LoadConfig(dir)
		if err != nil {
			t.Fatal(err)
		}
		fam, err := cfg.Family()
		if err != nil {
			t.Fatalf("%s: %v", shape, err)
		}
		want, _ := llama.ShapeConfig(shape)
		wantFam, _ := want.Family()
		if fmt.Sprint(fam) != fmt.Sprint(wantFam) || fmt.Sprint(cfg.EOSTokenID) != fmt.Sprint(want.EOSTokenID) {
			t.Errorf("%s: folder has %+v eos %v, shape %+v eos %v", shape, fam, cfg.EOSTokenID, wantFam, want.EOSTokenID)
		}
	}
}
