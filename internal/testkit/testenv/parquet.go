package testenv

import (
	"bytes"
	"io"

	"github.com/parquet-go/parquet-go"
)

// DecodeParquetRows decodes every row of the Parquet file data with
// parquet-go's generic row reader into a reused buffer and returns how many
// there are: the floor the log engine's decoding is measured against.
func DecodeParquetRows(data []byte) (int, error) {
	f, err := parquet.OpenFile(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return 0, err
	}
	rows := 0
	buf := make([]parquet.Row, 256)
	for _, rg := range f.RowGroups() {
		rr := rg.Rows()
		for {
			n, err := rr.ReadRows(buf)
			rows += n
			if err == io.EOF {
				break
			}
			if err != nil {
				rr.Close()
				return rows, err
			}
		}
		rr.Close()
	}
	return rows, nil
}
