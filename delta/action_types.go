package delta

import "github.com/deltafs/deltafs/delta/action"

// The log's actions and the table schema are defined in package action, a
// leaf that the checkpoint codec shares; these names keep them where the
// rest of deltafs has always found them.
type (
	Action             = action.Action
	Protocol           = action.Protocol
	Format             = action.Format
	Metadata           = action.Metadata
	DeletionVector     = action.DeletionVector
	Add                = action.Add
	Remove             = action.Remove
	Txn                = action.Txn
	DomainMetadata     = action.DomainMetadata
	CDC                = action.CDC
	CheckpointMetadata = action.CheckpointMetadata
	Sidecar            = action.Sidecar

	DataType          = action.DataType
	PrimitiveType     = action.PrimitiveType
	DecimalType       = action.DecimalType
	StructType        = action.StructType
	ArrayType         = action.ArrayType
	MapType           = action.MapType
	StructField       = action.StructField
	ColumnMappingMode = action.ColumnMappingMode
)

// Column mapping modes [PROTOCOL.md "Column Mapping"].
const (
	ColumnMappingNone = action.ColumnMappingNone
	ColumnMappingName = action.ColumnMappingName
	ColumnMappingID   = action.ColumnMappingID
)

// ParseSchema parses a metaData.schemaString (see action.ParseSchema).
func ParseSchema(schemaString string) (*StructType, error) { return action.ParseSchema(schemaString) }

// ColumnMappingFor is the column mapping mode in force for a table's
// protocol and metadata (see action.ColumnMappingFor).
func ColumnMappingFor(p *Protocol, m *Metadata) ColumnMappingMode {
	return action.ColumnMappingFor(p, m)
}
