// segmentio/kafka-go (0.2) driver of pafka's compatibility suite: `kafkago OP 'JSON'` prints one
// JSON object (the contract is in tests/compat/drivers.py). kafka-go 0.2 writes message format
// v1 (Produce v2) and reads with Fetch v2; it has no public offset-fetch or describe-groups API,
// so a group's commits are shown by a new member resuming where the group left off.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	kafka "github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/gzip"
	"github.com/segmentio/kafka-go/lz4"
	"github.com/segmentio/kafka-go/snappy"
)

type record struct {
	Partition int     `json:"partition"`
	Offset    int64   `json:"offset"`
	Key       *string `json:"key"`
	Value     *string `json:"value"`
	Member    string  `json:"member,omitempty"`
}

type args struct {
	Bootstrap         string          `json:"bootstrap"`
	Topics            []string        `json:"topics"`
	Topic             string          `json:"topic"`
	Partitions        json.RawMessage `json:"partitions"`
	ReplicationFactor int             `json:"replication_factor"`
	Codec             string          `json:"codec"`
	Records           []record        `json:"records"`
	Partition         int             `json:"partition"`
	Offset            int64           `json:"offset"`
	Count             int             `json:"count"`
	Group             string          `json:"group"`
	First             int             `json:"first"`
	Second            []record        `json:"second"`
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, err)
	os.Exit(1)
}

func check(err error) {
	if err != nil {
		fail(err)
	}
}

func str(b []byte) *string {
	if b == nil {
		return nil
	}
	s := string(b)
	return &s
}

func bytesOf(s *string) []byte {
	if s == nil {
		return nil
	}
	return []byte(*s)
}

func brokers(a args) []string { return strings.Split(a.Bootstrap, ",") }

func codec(name string) kafka.CompressionCodec {
	switch name {
	case "", "none":
		return nil
	case "gzip":
		return gzip.NewCompressionCodec()
	case "snappy":
		return snappy.NewCompressionCodec()
	case "lz4":
		return lz4.NewCompressionCodec()
	}
	fail(fmt.Errorf("kafka-go 0.2 has no codec %q", name))
	return nil
}

func metadata(a args) interface{} {
	conn, err := kafka.Dial("tcp", brokers(a)[0])
	check(err)
	defer conn.Close()
	parts, err := conn.ReadPartitions(a.Topics...)
	check(err)
	// kafka-go 0.2 exposes brokers only as the replicas of partitions.
	seen := map[int]bool{}
	topics := map[string]int{}
	for _, p := range parts {
		topics[p.Topic]++
		for _, b := range p.Replicas {
			seen[b.ID] = true
		}
	}
	ids := []int{}
	for id := range seen {
		ids = append(ids, id)
	}
	sort.Ints(ids)
	return map[string]interface{}{"brokers": ids, "topics": topics}
}

func createTopic(a args) interface{} {
	conn, err := kafka.Dial("tcp", brokers(a)[0])
	check(err)
	defer conn.Close()
	var n int
	check(json.Unmarshal(a.Partitions, &n))
	check(conn.CreateTopics(kafka.TopicConfig{Topic: a.Topic, NumPartitions: n, ReplicationFactor: a.ReplicationFactor}))
	return map[string]interface{}{}
}

func produceRecords(a args, records []record, codecName string) {
	byPartition := map[int][]kafka.Message{}
	for _, r := range records {
		byPartition[r.Partition] = append(byPartition[r.Partition], kafka.Message{Key: bytesOf(r.Key), Value: bytesOf(r.Value)})
	}
	for p, msgs := range byPartition {
		conn, err := kafka.DialLeader(context.Background(), "tcp", brokers(a)[0], a.Topic, p)
		check(err)
		check(conn.SetRequiredAcks(-1))
		check(conn.SetWriteDeadline(time.Now().Add(30 * time.Second)))
		_, err = conn.WriteCompressedMessages(codec(codecName), msgs...)
		check(err)
		conn.Close()
	}
}

func produce(a args) interface{} {
	produceRecords(a, a.Records, a.Codec)
	return map[string]interface{}{"produced": len(a.Records)}
}

func consume(a args) interface{} {
	r := kafka.NewReader(kafka.ReaderConfig{Brokers: brokers(a), Topic: a.Topic, Partition: a.Partition, MaxWait: 200 * time.Millisecond})
	defer r.Close()
	check(r.SetOffset(a.Offset))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out := []record{}
	for len(out) < a.Count {
		m, err := r.ReadMessage(ctx)
		check(err)
		out = append(out, record{Partition: m.Partition, Offset: m.Offset, Key: str(m.Key), Value: str(m.Value)})
	}
	return map[string]interface{}{"records": out}
}

func groupReader(a args) *kafka.Reader {
	return kafka.NewReader(kafka.ReaderConfig{
		Brokers: brokers(a), GroupID: a.Group, Topic: a.Topic, MaxWait: 200 * time.Millisecond,
		// kafka-go 0.2 sends no LeaveGroup when a Reader closes: a member that leaves is
		// noticed when its session ends, so the session is Kafka's minimum.
		HeartbeatInterval: 500 * time.Millisecond, SessionTimeout: 6 * time.Second,
	})
}

func group(a args) interface{} {
	var mu sync.Mutex
	first, second := []record{}, []record{}
	phase := &first
	readers := map[string]*kafka.Reader{}
	done := map[string]chan struct{}{}
	ctx, cancel := map[string]context.Context{}, map[string]context.CancelFunc{}
	for _, name := range []string{"a", "b"} {
		readers[name] = groupReader(a)
		done[name] = make(chan struct{})
		ctx[name], cancel[name] = context.WithCancel(context.Background())
		go func(name string) {
			defer close(done[name])
			for {
				// ReadMessage commits each message before returning it (synchronous commits).
				m, err := readers[name].ReadMessage(ctx[name])
				if err != nil {
					if ctx[name].Err() == nil {
						fail(err)
					}
					return
				}
				mu.Lock()
				*phase = append(*phase, record{Partition: m.Partition, Offset: m.Offset, Key: str(m.Key), Value: str(m.Value), Member: name})
				mu.Unlock()
			}
		}(name)
	}
	waitFor := func(rs *[]record, n int, what string) {
		deadline := time.Now().Add(60 * time.Second)
		for {
			mu.Lock()
			got := len(*rs)
			mu.Unlock()
			if got >= n {
				return
			}
			if time.Now().After(deadline) {
				fail(fmt.Errorf("timed out waiting for %s (%d of %d)", what, got, n))
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	waitFor(&first, a.First, "the first records")
	// Phases on stderr, shown when a test fails.
	fmt.Fprintln(os.Stderr, time.Now().Format(time.StampMilli), "first records read; b leaves")
	cancel["b"]()
	<-done["b"]
	check(readers["b"].Close())
	mu.Lock()
	phase = &second
	mu.Unlock()
	fmt.Fprintln(os.Stderr, time.Now().Format(time.StampMilli), "b left")
	produceRecords(a, a.Second, "none")
	waitFor(&second, len(a.Second), "the second records")
	fmt.Fprintln(os.Stderr, time.Now().Format(time.StampMilli), "second records read; a leaves")
	cancel["a"]()
	<-done["a"]
	check(readers["a"].Close())
	return map[string]interface{}{"first": first, "second": second, "describe": nil, "committed": nil}
}

// resume: a new member of the group reads `count` records, starting where the group committed.
func resume(a args) interface{} {
	r := groupReader(a)
	defer r.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out := []record{}
	for len(out) < a.Count {
		m, err := r.ReadMessage(ctx)
		check(err)
		out = append(out, record{Partition: m.Partition, Offset: m.Offset, Key: str(m.Key), Value: str(m.Value)})
	}
	return map[string]interface{}{"records": out}
}

func main() {
	if len(os.Args) != 3 {
		fail(fmt.Errorf("usage: kafkago OP JSON"))
	}
	var a args
	check(json.Unmarshal([]byte(os.Args[2]), &a))
	ops := map[string]func(args) interface{}{
		"metadata": metadata, "create_topic": createTopic, "produce": produce, "consume": consume,
		"group": group, "resume": resume,
	}
	op, ok := ops[os.Args[1]]
	if !ok {
		fail(fmt.Errorf("unknown operation %s", os.Args[1]))
	}
	out, err := json.Marshal(op(a))
	check(err)
	fmt.Println(string(out))
}
