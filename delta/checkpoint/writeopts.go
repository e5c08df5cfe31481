package checkpoint

// The Parquet writer options of a checkpoint: the compression codec and
// data page version the table's delta.parquet.* properties ask for.

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/deltafs/deltafs/delta/action"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress"
)

// Table properties that direct how writers encode Parquet files
// [PROTOCOL.md "Table Properties"].
const (
	configParquetCodec   = "delta.parquet.compression.codec"
	configParquetVersion = "delta.parquet.format.version"
)

// formatVersion2 matches the DataPageV2 values of delta.parquet.format.version.
var formatVersion2 = regexp.MustCompile(`^2\.[0-9]+\.[0-9]+$`)

// writerOptions returns the Parquet writer options a checkpoint
// of a table with metadata m is encoded with: the codec of
// delta.parquet.compression.codec (matched case-insensitively; zstd when
// absent, as "Table Properties" says writers SHOULD default) and the data
// page version of delta.parquet.format.version (1.0.0, the default, is
// DataPageV1; 2.MINOR.PATCH is DataPageV2). A codec this writer does not
// have (lz4 with Hadoop framing, an unknown name) or a format version that
// is neither form is an error naming the property: the protocol says
// writers SHOULD abort rather than write what the table did not ask for.
func writerOptions(m *action.Metadata) ([]parquet.WriterOption, error) {
	var codec compress.Codec = &parquet.Zstd
	if v, ok := m.Configuration[configParquetCodec]; ok {
		switch strings.ToLower(strings.TrimSpace(v)) {
		case "uncompressed", "none":
			codec = &parquet.Uncompressed
		case "snappy":
			codec = &parquet.Snappy
		case "gzip":
			codec = &parquet.Gzip
		case "lz4_raw":
			codec = &parquet.Lz4Raw
		case "zstd":
			codec = &parquet.Zstd
		case "lz4":
			return nil, fmt.Errorf("table property %s=%q: the deprecated Hadoop-framed LZ4 codec is not supported by this writer (lz4_raw is)", configParquetCodec, v)
		default:
			return nil, fmt.Errorf("table property %s=%q is not a codec this writer knows (uncompressed, none, snappy, gzip, lz4_raw, zstd)", configParquetCodec, v)
		}
	}
	pageVersion := 1
	if v, ok := m.Configuration[configParquetVersion]; ok {
		switch v = strings.TrimSpace(v); {
		case v == "1.0.0":
		case formatVersion2.MatchString(v):
			pageVersion = 2
		default:
			return nil, fmt.Errorf("table property %s=%q is neither 1.0.0 nor 2.MINOR.PATCH", configParquetVersion, v)
		}
	}
	return []parquet.WriterOption{parquet.Compression(codec), parquet.DataPageVersion(pageVersion)}, nil
}
