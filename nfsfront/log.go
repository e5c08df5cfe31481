package nfsfront

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	nfs "github.com/willscott/go-nfs"
)

// go-nfs logs through one package-level logger; the servers of a process
// share it (the first Logger given wins).
var setLoggerOnce sync.Once

func setLogger(l *slog.Logger) {
	setLoggerOnce.Do(func() { nfs.SetLogger(&nfsLog{l: l, level: nfs.WarnLevel}) })
}

// nfsLog is go-nfs's Logger over slog, up to its warnings (it logs
// every failed lookup as an error: those go to debug).
type nfsLog struct {
	l     *slog.Logger
	level nfs.LogLevel
}

func (n *nfsLog) SetLevel(level nfs.LogLevel) { n.level = level }
func (n *nfsLog) GetLevel() nfs.LogLevel      { return n.level }
func (n *nfsLog) ParseLevel(s string) (nfs.LogLevel, error) {
	return nfs.Log.ParseLevel(s)
}

func (n *nfsLog) log(level nfs.LogLevel, msg string) {
	if level > n.level {
		return
	}
	sl := slog.LevelDebug // go-nfs's errors are per-request failures: the client gets the status
	switch level {
	case nfs.PanicLevel, nfs.FatalLevel:
		sl = slog.LevelError
	case nfs.WarnLevel:
		sl = slog.LevelWarn
	}
	n.l.Log(context.Background(), sl, "deltafs: nfs: "+msg)
}

func (n *nfsLog) Panic(a ...any)            { n.log(nfs.PanicLevel, fmt.Sprint(a...)) }
func (n *nfsLog) Fatal(a ...any)            { n.log(nfs.FatalLevel, fmt.Sprint(a...)) }
func (n *nfsLog) Error(a ...any)            { n.log(nfs.ErrorLevel, fmt.Sprint(a...)) }
func (n *nfsLog) Warn(a ...any)             { n.log(nfs.WarnLevel, fmt.Sprint(a...)) }
func (n *nfsLog) Info(a ...any)             { n.log(nfs.InfoLevel, fmt.Sprint(a...)) }
func (n *nfsLog) Debug(a ...any)            { n.log(nfs.DebugLevel, fmt.Sprint(a...)) }
func (n *nfsLog) Trace(a ...any)            { n.log(nfs.TraceLevel, fmt.Sprint(a...)) }
func (n *nfsLog) Print(a ...any)            { n.log(nfs.InfoLevel, fmt.Sprint(a...)) }
func (n *nfsLog) Panicf(f string, a ...any) { n.log(nfs.PanicLevel, fmt.Sprintf(f, a...)) }
func (n *nfsLog) Fatalf(f string, a ...any) { n.log(nfs.FatalLevel, fmt.Sprintf(f, a...)) }
func (n *nfsLog) Errorf(f string, a ...any) { n.log(nfs.ErrorLevel, fmt.Sprintf(f, a...)) }
func (n *nfsLog) Warnf(f string, a ...any)  { n.log(nfs.WarnLevel, fmt.Sprintf(f, a...)) }
func (n *nfsLog) Infof(f string, a ...any)  { n.log(nfs.InfoLevel, fmt.Sprintf(f, a...)) }
func (n *nfsLog) Debugf(f string, a ...any) { n.log(nfs.DebugLevel, fmt.Sprintf(f, a...)) }
func (n *nfsLog) Tracef(f string, a ...any) { n.log(nfs.TraceLevel, fmt.Sprintf(f, a...)) }
func (n *nfsLog) Printf(f string, a ...any) { n.log(nfs.InfoLevel, fmt.Sprintf(f, a...)) }
