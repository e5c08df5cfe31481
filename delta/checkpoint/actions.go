package checkpoint

import "github.com/deltafs/deltafs/delta/action"

// This file maps the checkpoint's top-level struct columns to the action
// types of actions.go. Each xxxCols type resolves its columns once per file
// (absent columns read as null) and decodes one row at a time.

// actionCols is one top-level action column of a checkpoint.
type actionCols interface {
	// set reports whether the row holds this action.
	set(rr *pqRowReader) bool
	// decode fills the action's field of a from the row.
	decode(rr *pqRowReader, a *action.Action)
}

// checkpointColumns returns the decoders of the action columns in the order
// the reader tries them; the first one set in a row wins.
func checkpointColumns(s pqResolver) []actionCols {
	return []actionCols{
		newAddCols(s.in("add")),
		newRemoveCols(s.in("remove")),
		newMetadataCols(s.in("metaData")),
		newProtocolCols(s.in("protocol")),
		newTxnCols(s.in("txn")),
		newDomainCols(s.in("domainMetadata")),
		newCheckpointMetaCols(s.in("checkpointMetadata")),
		newSidecarCols(s.in("sidecar")),
	}
}

type dvCols struct {
	g                                        pqGroup
	storageType, path, offset, size, cardina *pqLeaf
}

func newDVCols(s pqResolver) dvCols {
	return dvCols{
		g:           s.group(nil, "storageType"),
		storageType: s.leaf("storageType"),
		path:        s.leaf("pathOrInlineDv"),
		offset:      s.leaf("offset"),
		size:        s.leaf("sizeInBytes"),
		cardina:     s.leaf("cardinality"),
	}
}

func (c *dvCols) decode(rr *pqRowReader) *action.DeletionVector {
	if !c.g.set(rr) {
		return nil
	}
	return &action.DeletionVector{
		StorageType:    rr.internStr(c.storageType),
		PathOrInlineDV: rr.str(c.path),
		Offset:         rr.optI32(c.offset),
		SizeInBytes:    rr.i32(c.size),
		Cardinality:    rr.i64(c.cardina),
	}
}

type addCols struct {
	g                                     pqGroup
	path, size, modTime, dataChange       *pqLeaf
	stats, numRecords                     *pqLeaf
	parsed                                *parsedStats // nil without stats_parsed
	baseRowID, rowCommitVersion, provider *pqLeaf
	partitionValues, tags                 pqMap
	dv                                    dvCols
}

func newAddCols(s pqResolver) *addCols {
	return &addCols{
		g:                s.group(nil, "path"),
		path:             s.leaf("path"),
		size:             s.leaf("size"),
		modTime:          s.leaf("modificationTime"),
		dataChange:       s.leaf("dataChange"),
		stats:            s.leaf("stats"),
		numRecords:       s.leaf("stats_parsed", "numRecords"),
		parsed:           newParsedStats(s),
		baseRowID:        s.leaf("baseRowId"),
		rowCommitVersion: s.leaf("defaultRowCommitVersion"),
		provider:         s.leaf("clusteringProvider"),
		partitionValues:  s.mapCol("partitionValues"),
		tags:             s.mapCol("tags"),
		dv:               newDVCols(s.in("deletionVector")),
	}
}

func (c *addCols) set(rr *pqRowReader) bool { return c.g.set(rr) }

func (c *addCols) decode(rr *pqRowReader, a *action.Action) {
	add := &action.Add{
		Path:                    rr.str(c.path),
		PartitionValues:         rr.ptrMap(&c.partitionValues),
		Size:                    rr.i64(c.size),
		ModificationTime:        rr.i64(c.modTime),
		DataChange:              rr.boolean(c.dataChange),
		Stats:                   rr.str(c.stats),
		Tags:                    rr.strMap(&c.tags),
		DeletionVector:          c.dv.decode(rr),
		BaseRowID:               rr.optI64(c.baseRowID),
		DefaultRowCommitVersion: rr.optI64(c.rowCommitVersion),
		ClusteringProvider:      rr.optStr(c.provider),
	}
	// stats_parsed is only consulted when the JSON stats cannot answer:
	// absent JSON stats are rebuilt from it (numRecords included), so that
	// no checkpoint written from these actions loses them. Each leaf is
	// read at most once per row.
	switch _, ok := action.StatsNumRecords(add.Stats); {
	case add.Stats == "" && c.parsed != nil:
		add.Stats = c.parsed.json(rr)
		if n, ok := action.StatsNumRecords(add.Stats); ok {
			add.NumRecordsParsed = &n
		}
	case !ok && c.numRecords.col != nil:
		add.NumRecordsParsed = rr.optI64(c.numRecords)
	}
	a.Add = add
}

type removeCols struct {
	g                                   pqGroup
	path, deletionTimestamp, dataChange *pqLeaf
	extended, size, stats               *pqLeaf
	baseRowID, rowCommitVersion         *pqLeaf
	partitionValues, tags               pqMap
	dv                                  dvCols
}

func newRemoveCols(s pqResolver) *removeCols {
	return &removeCols{
		g:                 s.group(nil, "path"),
		path:              s.leaf("path"),
		deletionTimestamp: s.leaf("deletionTimestamp"),
		dataChange:        s.leaf("dataChange"),
		extended:          s.leaf("extendedFileMetadata"),
		size:              s.leaf("size"),
		stats:             s.leaf("stats"),
		baseRowID:         s.leaf("baseRowId"),
		rowCommitVersion:  s.leaf("defaultRowCommitVersion"),
		partitionValues:   s.mapCol("partitionValues"),
		tags:              s.mapCol("tags"),
		dv:                newDVCols(s.in("deletionVector")),
	}
}

func (c *removeCols) set(rr *pqRowReader) bool { return c.g.set(rr) }

func (c *removeCols) decode(rr *pqRowReader, a *action.Action) {
	a.Remove = &action.Remove{
		Path:                    rr.str(c.path),
		DeletionTimestamp:       rr.optI64(c.deletionTimestamp),
		DataChange:              rr.boolean(c.dataChange),
		ExtendedFileMetadata:    rr.optBool(c.extended),
		PartitionValues:         rr.ptrMap(&c.partitionValues),
		Size:                    rr.optI64(c.size),
		Stats:                   rr.str(c.stats),
		Tags:                    rr.strMap(&c.tags),
		DeletionVector:          c.dv.decode(rr),
		BaseRowID:               rr.optI64(c.baseRowID),
		DefaultRowCommitVersion: rr.optI64(c.rowCommitVersion),
	}
}

type metadataCols struct {
	g                               pqGroup
	id, name, description, provider *pqLeaf
	schemaString, createdTime       *pqLeaf
	options, configuration          pqMap
	partitionColumns                pqList
}

func newMetadataCols(s pqResolver) *metadataCols {
	return &metadataCols{
		g:                s.group(nil, "id", "schemaString"),
		id:               s.leaf("id"),
		name:             s.leaf("name"),
		description:      s.leaf("description"),
		provider:         s.leaf("format", "provider"),
		options:          s.mapCol("format", "options"),
		schemaString:     s.leaf("schemaString"),
		partitionColumns: s.listCol("partitionColumns"),
		createdTime:      s.leaf("createdTime"),
		configuration:    s.mapCol("configuration"),
	}
}

func (c *metadataCols) set(rr *pqRowReader) bool { return c.g.set(rr) }

func (c *metadataCols) decode(rr *pqRowReader, a *action.Action) {
	a.MetaData = &action.Metadata{
		ID:               rr.str(c.id),
		Name:             rr.str(c.name),
		Description:      rr.str(c.description),
		Format:           action.Format{Provider: rr.str(c.provider), Options: rr.strMap(&c.options)},
		SchemaString:     rr.str(c.schemaString),
		PartitionColumns: rr.list(&c.partitionColumns),
		CreatedTime:      rr.optI64(c.createdTime),
		Configuration:    rr.strMap(&c.configuration),
	}
}

type protocolCols struct {
	g                              pqGroup
	minReader, minWriter           *pqLeaf
	readerFeatures, writerFeatures pqList
}

func newProtocolCols(s pqResolver) *protocolCols {
	return &protocolCols{
		g:              s.group(nil, "minReaderVersion"),
		minReader:      s.leaf("minReaderVersion"),
		minWriter:      s.leaf("minWriterVersion"),
		readerFeatures: s.listCol("readerFeatures"),
		writerFeatures: s.listCol("writerFeatures"),
	}
}

func (c *protocolCols) set(rr *pqRowReader) bool { return c.g.set(rr) }

func (c *protocolCols) decode(rr *pqRowReader, a *action.Action) {
	a.Protocol = &action.Protocol{
		MinReaderVersion: int(rr.i32(c.minReader)),
		MinWriterVersion: int(rr.i32(c.minWriter)),
		ReaderFeatures:   rr.list(&c.readerFeatures),
		WriterFeatures:   rr.list(&c.writerFeatures),
	}
}

type txnCols struct {
	g                          pqGroup
	appID, version, lastUpdate *pqLeaf
}

func newTxnCols(s pqResolver) *txnCols {
	return &txnCols{
		g:          s.group(nil, "appId", "version"),
		appID:      s.leaf("appId"),
		version:    s.leaf("version"),
		lastUpdate: s.leaf("lastUpdated"),
	}
}

func (c *txnCols) set(rr *pqRowReader) bool { return c.g.set(rr) }

func (c *txnCols) decode(rr *pqRowReader, a *action.Action) {
	a.Txn = &action.Txn{AppID: rr.str(c.appID), Version: rr.i64(c.version), LastUpdated: rr.optI64(c.lastUpdate)}
}

type domainCols struct {
	g                              pqGroup
	domain, configuration, removed *pqLeaf
}

func newDomainCols(s pqResolver) *domainCols {
	return &domainCols{
		g:             s.group(nil, "domain"),
		domain:        s.leaf("domain"),
		configuration: s.leaf("configuration"),
		removed:       s.leaf("removed"),
	}
}

func (c *domainCols) set(rr *pqRowReader) bool { return c.g.set(rr) }

func (c *domainCols) decode(rr *pqRowReader, a *action.Action) {
	a.DomainMetadata = &action.DomainMetadata{
		Domain:        rr.str(c.domain),
		Configuration: rr.str(c.configuration),
		Removed:       rr.boolean(c.removed),
	}
}

type checkpointMetaCols struct {
	g       pqGroup
	version *pqLeaf
	tags    pqMap
}

func newCheckpointMetaCols(s pqResolver) *checkpointMetaCols {
	return &checkpointMetaCols{g: s.group(nil, "version"), version: s.leaf("version"), tags: s.mapCol("tags")}
}

func (c *checkpointMetaCols) set(rr *pqRowReader) bool { return c.g.set(rr) }

func (c *checkpointMetaCols) decode(rr *pqRowReader, a *action.Action) {
	a.CheckpointMetadata = &action.CheckpointMetadata{Version: rr.i64(c.version), Tags: rr.strMap(&c.tags)}
}

type sidecarCols struct {
	g                          pqGroup
	path, sizeInBytes, modTime *pqLeaf
	tags                       pqMap
}

func newSidecarCols(s pqResolver) *sidecarCols {
	return &sidecarCols{
		g:           s.group(nil, "path"),
		path:        s.leaf("path"),
		sizeInBytes: s.leaf("sizeInBytes"),
		modTime:     s.leaf("modificationTime"),
		tags:        s.mapCol("tags"),
	}
}

func (c *sidecarCols) set(rr *pqRowReader) bool { return c.g.set(rr) }

func (c *sidecarCols) decode(rr *pqRowReader, a *action.Action) {
	a.Sidecar = &action.Sidecar{
		Path:             rr.str(c.path),
		SizeInBytes:      rr.i64(c.sizeInBytes),
		ModificationTime: rr.i64(c.modTime),
		Tags:             rr.strMap(&c.tags),
	}
}
