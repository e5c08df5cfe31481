package sample

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"github.com/parquet-go/parquet-go"
)

// schemaString is the table schema: every column nullable, as Spark
// creates tables.
const schemaString = `{"type":"struct","fields":[` +
	`{"name":"order_id","type":"long","nullable":true,"metadata":{}},` +
	`{"name":"customer","type":"string","nullable":true,"metadata":{}},` +
	`{"name":"amount","type":"double","nullable":true,"metadata":{}},` +
	`{"name":"region","type":"string","nullable":true,"metadata":{}},` +
	`{"name":"order_date","type":"date","nullable":true,"metadata":{}}]}`

// orderRow is one row of a data file: the table's columns but the
// partition column region, all optional as Spark writes nullable columns.
type orderRow struct {
	OrderID   *int64   `parquet:"order_id,optional"`
	Customer  *string  `parquet:"customer,optional"`
	Amount    *float64 `parquet:"amount,optional"`
	OrderDate *int32   `parquet:"order_date,date"`
}

var customers = []string{"acme", "globex", "initech", "umbrella", "hooli"}

// firstOrderDate is the order_date of orders 1..9; every ten orders are
// one day later.
var firstOrderDate = time.Date(2025, 2, 1, 0, 0, 0, 0, time.UTC)

// order returns the deterministic content of order id.
func order(id int64) orderRow {
	c := customers[(id*7)%int64(len(customers))]
	amount := float64((id*37)%500)/4 + 5
	day := int32(firstOrderDate.Unix()/86400 + id/10)
	return orderRow{OrderID: &id, Customer: &c, Amount: &amount, OrderDate: &day}
}

func (f fileSpec) rows() []orderRow {
	rows := make([]orderRow, f.n)
	for i := range rows {
		rows[i] = order(f.first + int64(i))
	}
	return rows
}

// deletedPositions returns the row positions of f's orders of
// DeletedCustomer, in ascending order.
func deletedPositions(f fileSpec) []uint64 {
	var pos []uint64
	for i, r := range f.rows() {
		if *r.Customer == DeletedCustomer {
			pos = append(pos, uint64(i))
		}
	}
	return pos
}

// encodeParquet returns f's rows as a snappy-compressed Parquet file.
func encodeParquet(f fileSpec) ([]byte, error) {
	var buf bytes.Buffer
	w := parquet.NewGenericWriter[orderRow](&buf, parquet.Compression(&parquet.Snappy),
		parquet.CreatedBy("deltafs-sample", "1", ""))
	if _, err := w.Write(f.rows()); err != nil {
		return nil, fmt.Errorf("encode parquet: %w", err)
	}
	if err := w.Close(); err != nil {
		return nil, fmt.Errorf("encode parquet: %w", err)
	}
	return buf.Bytes(), nil
}

// fileStats is the stats JSON of an add (PROTOCOL.md "Per-file Statistics").
type fileStats struct {
	NumRecords  int64            `json:"numRecords"`
	MinValues   map[string]any   `json:"minValues"`
	MaxValues   map[string]any   `json:"maxValues"`
	NullCount   map[string]int64 `json:"nullCount"`
	TightBounds *bool            `json:"tightBounds,omitempty"`
}

// stats computes f's stats over all its physical rows. With a deletion
// vector the bounds are no longer tight, as Spark records it.
func stats(f fileSpec, withDV bool) (string, error) {
	rows := f.rows()
	s := fileStats{
		NumRecords: int64(len(rows)),
		MinValues:  map[string]any{}, MaxValues: map[string]any{},
		NullCount: map[string]int64{"order_id": 0, "customer": 0, "amount": 0, "order_date": 0},
	}
	if withDV {
		s.TightBounds = new(bool)
	}
	for i, r := range rows {
		vals := map[string]any{"order_id": *r.OrderID, "customer": *r.Customer, "amount": *r.Amount, "order_date": *r.OrderDate}
		for k, v := range vals {
			if i == 0 || less(v, s.MinValues[k]) {
				s.MinValues[k] = v
			}
			if i == 0 || less(s.MaxValues[k], v) {
				s.MaxValues[k] = v
			}
		}
	}
	for _, m := range []map[string]any{s.MinValues, s.MaxValues} {
		m["order_date"] = time.Unix(int64(m["order_date"].(int32))*86400, 0).UTC().Format(time.DateOnly)
	}
	b, err := json.Marshal(s)
	return string(b), err
}

// less compares two values of the same column type.
func less(a, b any) bool {
	switch a := a.(type) {
	case int64:
		return a < b.(int64)
	case int32:
		return a < b.(int32)
	case float64:
		return a < b.(float64)
	case string:
		return a < b.(string)
	}
	return false
}
