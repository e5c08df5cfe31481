package pqfile

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress"
)

type proveRow struct {
	ID   int64   `parquet:"id,delta"`
	N    int32   `parquet:"n,delta"`
	S    string  `parquet:"s,delta"`
	P    string  `parquet:"p,plain"`
	I    int32   `parquet:"i,split"`
	F    float32 `parquet:"f,split"`
	D    float64 `parquet:"d"`
	B    bool    `parquet:"b"`
	OptS *string `parquet:"opt_s,optional,dict"`
}

func proveFile(t testing.TB, n int, codec compress.Codec, v2 bool) []byte {
	t.Helper()
	rows := make([]proveRow, n)
	for i := range rows {
		s := fmt.Sprintf("https://example.com/some/long/shared/prefix/%06d", i)
		rows[i] = proveRow{ID: int64(i * 3), N: int32(-i), S: s, P: s[:20+i%20], F: float32(i) / 7, D: float64(i), I: int32(i * 11), B: i%3 == 0}
		if i%5 != 0 {
			rows[i].OptS = &rows[i].S
		}
	}
	var buf bytes.Buffer
	opts := []parquet.WriterOption{parquet.Compression(codec), parquet.MaxRowsPerRowGroup(700), parquet.PageBufferSize(4096)}
	if v2 {
		opts = append(opts, parquet.DataPageVersion(2))
	}
	w := parquet.NewGenericWriter[proveRow](&buf, opts...)
	if _, err := w.Write(rows); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// parquetGoValues returns, per column, the values parquet-go reads
// (present values as bytes) and its null count.
func parquetGoValues(t *testing.T, data []byte) ([][]string, []int64) {
	t.Helper()
	f, err := parquet.OpenFile(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	n := len(f.Metadata().RowGroups[0].Columns)
	vals, nulls := make([][]string, n), make([]int64, n)
	for _, rg := range f.RowGroups() {
		for j, cc := range rg.ColumnChunks() {
			pages := cc.Pages()
			for {
				pg, err := pages.ReadPage()
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				buf := make([]parquet.Value, pg.NumValues())
				k, _ := pg.Values().ReadValues(buf)
				for _, v := range buf[:k] {
					if v.IsNull() {
						nulls[j]++
					} else if v.Kind() == parquet.Boolean {
						vals[j] = append(vals[j], string([]byte{byte(boolByte(v.Boolean()))}))
					} else {
						vals[j] = append(vals[j], string(v.Bytes()))
					}
				}
			}
			pages.Close()
		}
	}
	return vals, nulls
}

func boolByte(b bool) int {
	if b {
		return 1
	}
	return 0
}

func proveValues(t *testing.T, data []byte, budget *Budget) ([][]string, []int64, int64) {
	t.Helper()
	meta := footerOf(t, data).meta
	n := len(meta.RowGroups[0].Columns)
	// Chunks are visited from several goroutines, each chunk's pages in
	// order: values are kept per row group and leaf, and joined after.
	byGroup := make([][][]string, len(meta.RowGroups))
	nullsByGroup := make([][]int64, len(meta.RowGroups))
	for g := range byGroup {
		byGroup[g], nullsByGroup[g] = make([][]string, n), make([]int64, n)
	}
	rows, err := Prove(context.Background(), bytes.NewReader(data), int64(len(data)), &meta, ProveOptions{Budget: budget}, func(p *ProvedPage) error {
		for i := range p.Len() {
			byGroup[p.RowGroup][p.Leaf] = append(byGroup[p.RowGroup][p.Leaf], string(p.Value(i)))
		}
		for _, d := range p.Def {
			if int(d) < p.MaxDef {
				nullsByGroup[p.RowGroup][p.Leaf]++
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("Prove: %v", err)
	}
	vals, nulls := make([][]string, n), make([]int64, n)
	for g := range byGroup {
		for leaf := range n {
			vals[leaf] = append(vals[leaf], byGroup[g][leaf]...)
			nulls[leaf] += nullsByGroup[g][leaf]
		}
	}
	return vals, nulls, rows
}

// TestProveMatchesParquetGo: every value Prove decodes is the one
// parquet-go reads from the same rows written uncompressed (parquet-go
// v0.32.0 misread some LZ4_RAW pages of its own files before lz4fix.go),
// over nested, repeated, dictionary and DELTA/split columns, v1 and v2
// pages, every codec.
func TestProveMatchesParquetGo(t *testing.T) {
	for _, codec := range testCodecs {
		for _, v2 := range []bool{false, true} {
			for name, files := range map[string][2][]byte{
				"nested": {genFile(t, genRows(1500), 600, codec), genFile(t, genRows(1500), 600, &parquet.Uncompressed)},
				"delta":  {proveFile(t, 2000, codec, v2), proveFile(t, 2000, &parquet.Uncompressed, v2)},
			} {
				data := files[0]
				t.Run(fmt.Sprintf("%s/%v/v2=%v", name, codec.CompressionCodec(), v2), func(t *testing.T) {
					budget := NewBudget(8 << 20)
					want, wantNulls := parquetGoValues(t, files[1])
					got, gotNulls, rows := proveValues(t, data, budget)
					if meta := footerOf(t, data).meta; rows != meta.NumRows {
						t.Fatalf("rows %d, footer %d", rows, meta.NumRows)
					}
					for j := range want {
						if len(got[j]) != len(want[j]) || gotNulls[j] != wantNulls[j] {
							t.Fatalf("column %d: %d values %d nulls, parquet-go %d values %d nulls", j, len(got[j]), gotNulls[j], len(want[j]), wantNulls[j])
						}
						for i := range want[j] {
							if got[j][i] != want[j][i] {
								t.Fatalf("column %d value %d: %q, parquet-go %q", j, i, got[j][i], want[j][i])
							}
						}
					}
					if budget.InUse() != 0 {
						t.Fatalf("%d bytes still held", budget.InUse())
					}
				})
			}
		}
	}
}

// TestProveBudgetRefusesLargePage: a page that needs more than the whole
// budget refuses the file naming the limit.
func TestProveBudgetRefusesLargePage(t *testing.T) {
	data := proveFile(t, 2000, &parquet.Snappy, false)
	meta := footerOf(t, data).meta
	_, err := Prove(context.Background(), bytes.NewReader(data), int64(len(data)), &meta, ProveOptions{Budget: NewBudget(4096)}, func(*ProvedPage) error { return nil })
	if !errors.Is(err, ErrLimit) {
		t.Fatalf("err = %v, want ErrLimit", err)
	}
	t.Log(err)
}

// FuzzProve hands arbitrary files to Prove (seeds: generated files of
// every codec, v1 and v2 pages). Nothing may panic; a file whose footer
// passes CheckFooter and decodes is either proven, with its footer's row
// count, or refused with ErrCorrupt, ErrUnsupported or ErrLimit; and the
// budget is whole again afterwards.
func FuzzProve(f *testing.F) {
	for _, codec := range testCodecs {
		f.Add(proveFile(f, 40, codec, false))
		f.Add(proveFile(f, 40, codec, true))
		f.Add(genFile(f, genRows(30), 12, codec))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r := bytes.NewReader(data)
		if CheckFooter(r, int64(len(data))) != nil {
			return
		}
		ft, err := readFooter(r, int64(len(data)))
		if err != nil {
			return
		}
		budget := NewBudget(16 << 20)
		rows, err := Prove(context.Background(), r, int64(len(data)), &ft.meta, ProveOptions{Budget: budget}, func(p *ProvedPage) error {
			for i := range p.Len() {
				_ = p.Value(i)
			}
			return nil
		})
		switch {
		case err == nil && rows != ft.meta.NumRows:
			t.Fatalf("proved %d rows, footer %d", rows, ft.meta.NumRows)
		case err != nil && !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrUnsupported) && !errors.Is(err, ErrLimit):
			t.Fatalf("error %v is none of ErrCorrupt, ErrUnsupported, ErrLimit", err)
		}
		if budget.InUse() != 0 {
			t.Fatalf("%d bytes still held", budget.InUse())
		}
	})
}
