package cudnn

import (
	"hash/crc32"
	"strconv"
	"strings"

	"github.com/convcache/convcache/internal/bytesize"
)

// An engine choice record (include/convcache_engine.h): what the
// interposer and the v8 drop-in store for a backend-API graph.
const (
	choiceMagic    = 0x31454343 // "CCE1"
	choiceFormat   = 1
	ChoiceSize     = 800
	choiceMaxKnobs = 48
	// ChoicesMagic starts the interposer's value: a list of choices.
	ChoicesMagic = 0x31564343 // "CCV1"
	// ChoicesMagicPlans starts a list followed by what each choice's
	// plans read as (8 bytes each), where some differ from the choice.
	ChoicesMagicPlans = 0x32564343 // "CCV2"
	maxChoices        = 4
)

// Knob is one knob choice: a cudnnBackendKnobType_t and its value.
type Knob struct {
	Type  int32
	Value int64
}

// EngineChoice is a backend-API engine choice: the engine's global index,
// its knob choices (sorted by type) and the workspace it needs.
type EngineChoice struct {
	Engine    int64
	Workspace int64
	Knobs     []Knob
}

// DecodeEngineChoice checks and decodes one 800-byte record, as
// convcache_engine_check does: magic, format, size, checksum, then the
// fields (knob count, zero padding and unused slots, knobs sorted by type
// without repeats, engine and workspace not negative).
func DecodeEngineChoice(b []byte) (EngineChoice, bool) {
	var c EngineChoice
	if len(b) != ChoiceSize || le.Uint32(b) != choiceMagic || le.Uint16(b[4:]) != choiceFormat ||
		le.Uint16(b[6:]) != ChoiceSize {
		return c, false
	}
	t := append([]byte(nil), b...)
	for i := 28; i < 32; i++ {
		t[i] = 0
	}
	if crc32.ChecksumIEEE(t) != le.Uint32(b[28:]) {
		return c, false
	}
	c.Engine, c.Workspace = int64(le.Uint64(b[8:])), int64(le.Uint64(b[16:]))
	n := le.Uint32(b[24:])
	if c.Engine < 0 || c.Workspace < 0 || n > choiceMaxKnobs {
		return EngineChoice{}, false
	}
	for i := 0; i < choiceMaxKnobs; i++ {
		k := b[32+16*i : 48+16*i]
		typ, zero, val := int32(le.Uint32(k)), le.Uint32(k[4:]), int64(le.Uint64(k[8:]))
		if zero != 0 {
			return EngineChoice{}, false
		}
		if uint32(i) >= n {
			if typ != 0 || val != 0 {
				return EngineChoice{}, false
			}
			continue
		}
		if i > 0 && typ <= c.Knobs[i-1].Type {
			return EngineChoice{}, false
		}
		c.Knobs = append(c.Knobs, Knob{Type: typ, Value: val})
	}
	return c, true
}

// DecodeEngineChoices decodes the interposer's value: "CCV1" or "CCV2", a
// count of 1 to 4, then that many records, each checked, no two the same
// engine and knobs; "CCV2" then has 8 bytes per record (a digest of what
// its plans read as, which is not returned). "CCV1" with a count of 0 and
// nothing after it is an empty list: the choice served last failed in a
// host's run after timing, and the next process benchmarks the graph.
func DecodeEngineChoices(b []byte) ([]EngineChoice, bool) {
	if len(b) < 8 || (le.Uint32(b) != ChoicesMagic && le.Uint32(b) != ChoicesMagicPlans) {
		return nil, false
	}
	n := int(le.Uint32(b[4:]))
	if n == 0 && len(b) == 8 && le.Uint32(b) == ChoicesMagic {
		return []EngineChoice{}, true
	}
	ids := 0
	if le.Uint32(b) == ChoicesMagicPlans {
		ids = 8
	}
	if n < 1 || n > maxChoices || len(b) != 8+n*(ChoiceSize+ids) {
		return nil, false
	}
	out := make([]EngineChoice, n)
	for i := range out {
		c, ok := DecodeEngineChoice(b[8+i*ChoiceSize : 8+(i+1)*ChoiceSize])
		if !ok {
			return nil, false
		}
		for _, d := range out[:i] {
			if d.same(c) {
				return nil, false
			}
		}
		out[i] = c
	}
	return out, true
}

func (c EngineChoice) same(d EngineChoice) bool {
	if c.Engine != d.Engine || len(c.Knobs) != len(d.Knobs) {
		return false
	}
	for i := range c.Knobs {
		if c.Knobs[i] != d.Knobs[i] {
			return false
		}
	}
	return true
}

// Tag is the choice in cudnn_frontend's plan-tag manner: "eng12_k2=3_k14=1".
func (c EngineChoice) Tag() string {
	var b strings.Builder
	b.WriteString("eng" + strconv.FormatInt(c.Engine, 10))
	for _, k := range c.Knobs {
		b.WriteString("_k" + strconv.Itoa(int(k.Type)) + "=" + strconv.FormatInt(k.Value, 10))
	}
	return b.String()
}

// String is the tag and the workspace: "eng12_k2=3 ws 4 KiB".
func (c EngineChoice) String() string {
	return c.Tag() + " ws " + bytesize.Format(uint64(c.Workspace))
}
