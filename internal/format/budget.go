package format

import "encoding/binary"

// Bounds on what a snapshot may make a reader hold. Every count and length
// in a file is a hint, bounded by the bytes that carry it.
const (
	// maxRecordRaw is the most bytes one record takes in a decoded chunk:
	// four uvarints, a key and a value.
	maxRecordRaw = 4*binary.MaxVarintLen64 + MaxKeySize + MaxValueSize

	// maxChunkRaw bounds a chunk's decoded size. A writer cuts a chunk once
	// it holds snapshotChunkRaw bytes, so the last record may take it past
	// that by at most one record. A chunk that declares more, or expands to
	// more, is damage.
	maxChunkRaw = snapshotChunkRaw + maxRecordRaw

	// ExpandFactor bounds what one reading of a file may decode: the
	// decoded bytes of its chunks, each record counted as at least
	// MinRecordCost bytes, are at most ExpandFactor times the file's size
	// (plus budgetSlack). A snapshot of cuDNN keys and results expands
	// about 7 to 12 times; writers pad a file that would expand more (see
	// Contents.Encode), so a file this package wrote is always read whole.
	// The reader's memory is then a small multiple of the file's size.
	ExpandFactor = 16

	// MinRecordCost is what a record costs against the budget at least:
	// about what an index or a merged view holds per entry besides its
	// bytes. Without it, a file of tiny records could make millions of
	// entries out of a few kilobytes.
	MinRecordCost = 128

	// budgetSlack lets a small file written before writers padded hold a
	// chunk of the largest size whatever it compresses to: one maximal
	// value, say.
	budgetSlack = maxChunkRaw
)

// Budget is what is left to decode in one reading of a file. It
// starts at ExpandFactor times the file's size plus budgetSlack, and grows
// by ExpandFactor times what the file grows. Chunks that do not fit are
// damage, never decoded.
type Budget struct{ left int64 }

func NewBudget(fileBytes int64) Budget {
	return Budget{left: ExpandFactor*max(fileBytes, 0) + budgetSlack}
}

// Left returns what is left of the budget.
func (b Budget) Left() int64 { return b.left }

// Grow adds the budget of n more file bytes.
func (b *Budget) Grow(n int64) { b.left += ExpandFactor * max(n, 0) }

// take spends n if that much is left.
func (b *Budget) take(n int64) bool {
	if n > b.left {
		return false
	}
	b.left -= n
	return true
}

// recordExtra is what a record of raw decoded bytes costs beyond them.
func recordExtra(raw int) int64 { return int64(max(MinRecordCost-raw, 0)) }
