// Sarama driver of pafka's compatibility suite: `sarama VERSION OP 'JSON'` prints one JSON
// object (the contract is in tests/compat/drivers.py). VERSION is "default" (Sarama's own
// default configuration, which speaks Kafka 0.8.2: Produce v0, Fetch v0, magic 0) or "max"
// (the newest sarama.Version this Sarama knows).
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/Shopify/sarama"
)

type record struct {
	Partition int32   `json:"partition"`
	Offset    int64   `json:"offset"`
	Key       *string `json:"key"`
	Value     *string `json:"value"`
	Member    string  `json:"member,omitempty"`
}

type args struct {
	Bootstrap         string           `json:"bootstrap"`
	Topics            []string         `json:"topics"`
	Topic             string           `json:"topic"`
	Partitions        json.RawMessage  `json:"partitions"`
	ReplicationFactor int16            `json:"replication_factor"`
	Codec             string           `json:"codec"`
	Records           []record         `json:"records"`
	Partition         int32            `json:"partition"`
	Offset            int64            `json:"offset"`
	Count             int              `json:"count"`
	Group             string           `json:"group"`
	First             int              `json:"first"`
	Second            []record         `json:"second"`
	Offsets           map[string]int64 `json:"offsets"`
}

var codecs = map[string]sarama.CompressionCodec{
	"none":   sarama.CompressionNone,
	"gzip":   sarama.CompressionGZIP,
	"snappy": sarama.CompressionSnappy,
	"lz4":    sarama.CompressionLZ4,
	"zstd":   sarama.CompressionZSTD,
}

func config(version string) *sarama.Config {
	cfg := sarama.NewConfig()
	if version == "max" {
		cfg.Version = sarama.MaxVersion
	} else if version != "default" {
		fail(fmt.Errorf("unknown version %q", version))
	}
	cfg.ClientID = "pafka-compat"
	cfg.Producer.Return.Successes = true
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Partitioner = sarama.NewManualPartitioner
	cfg.Consumer.Return.Errors = true
	cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	cfg.Consumer.Offsets.CommitInterval = 200 * time.Millisecond
	cfg.Metadata.Retry.Max = 10
	cfg.Metadata.Retry.Backoff = 300 * time.Millisecond
	return cfg
}

func brokers(a args) []string { return strings.Split(a.Bootstrap, ",") }

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

func bytesOf(s *string) sarama.Encoder {
	if s == nil {
		return nil
	}
	return sarama.StringEncoder(*s)
}

func partitionList(raw json.RawMessage) []int32 {
	var out []int32
	if len(raw) > 0 {
		check(json.Unmarshal(raw, &out))
	}
	return out
}

func metadata(cfg *sarama.Config, a args) interface{} {
	client, err := sarama.NewClient(brokers(a), cfg)
	check(err)
	defer client.Close()
	check(client.RefreshMetadata(a.Topics...))
	var brokers []int
	for _, b := range client.Brokers() {
		brokers = append(brokers, int(b.ID()))
	}
	sort.Ints(brokers)
	topics := map[string]int{}
	for _, t := range a.Topics {
		parts, err := client.Partitions(t)
		check(err)
		topics[t] = len(parts)
	}
	return map[string]interface{}{"brokers": brokers, "topics": topics}
}

func createTopic(cfg *sarama.Config, a args) interface{} {
	admin, err := sarama.NewClusterAdmin(brokers(a), cfg)
	check(err)
	defer admin.Close()
	var n int32
	check(json.Unmarshal(a.Partitions, &n))
	detail := &sarama.TopicDetail{NumPartitions: n, ReplicationFactor: a.ReplicationFactor}
	check(admin.CreateTopic(a.Topic, detail, false))
	return map[string]interface{}{}
}

func produceRecords(cfg *sarama.Config, a args, records []record, codec string) {
	cfg.Producer.Compression = codecs[codec]
	// One request per partition with every record in it, so the codec compresses many together.
	cfg.Producer.Flush.Messages = len(records)
	cfg.Producer.Flush.Frequency = 100 * time.Millisecond
	producer, err := sarama.NewSyncProducer(brokers(a), cfg)
	check(err)
	defer producer.Close()
	var msgs []*sarama.ProducerMessage
	for _, r := range records {
		msgs = append(msgs, &sarama.ProducerMessage{
			Topic: a.Topic, Partition: r.Partition, Key: bytesOf(r.Key), Value: bytesOf(r.Value),
		})
	}
	if err := producer.SendMessages(msgs); err != nil {
		// The aggregate says only how many failed; the first message's error says why.
		if errs, ok := err.(sarama.ProducerErrors); ok && len(errs) > 0 {
			fail(fmt.Errorf("%v: %v", err, errs[0].Err))
		}
		fail(err)
	}
}

func produce(cfg *sarama.Config, a args) interface{} {
	codec := a.Codec
	if codec == "" {
		codec = "none"
	}
	produceRecords(cfg, a, a.Records, codec)
	return map[string]interface{}{"produced": len(a.Records)}
}

func consume(cfg *sarama.Config, a args) interface{} {
	consumer, err := sarama.NewConsumer(brokers(a), cfg)
	check(err)
	defer consumer.Close()
	pc, err := consumer.ConsumePartition(a.Topic, a.Partition, a.Offset)
	check(err)
	defer pc.Close()
	out := []record{}
	timeout := time.After(60 * time.Second)
	for len(out) < a.Count {
		select {
		case m := <-pc.Messages():
			out = append(out, record{Partition: m.Partition, Offset: m.Offset, Key: str(m.Key), Value: str(m.Value)})
		case err := <-pc.Errors():
			fail(err)
		case <-timeout:
			fail(fmt.Errorf("read %d of %d records", len(out), a.Count))
		}
	}
	return map[string]interface{}{"records": out}
}

// member is one consumer-group member; handler methods run on Sarama's goroutines.
type member struct {
	name string
	sink func(record)
}

func (m *member) Setup(s sarama.ConsumerGroupSession) error {
	// On stderr, shown when a test fails: who held what in which generation.
	fmt.Fprintln(os.Stderr, "member", m.name, s.MemberID(), "generation", s.GenerationID(), "claims", s.Claims())
	return nil
}
func (m *member) Cleanup(sarama.ConsumerGroupSession) error { return nil }
func (m *member) ConsumeClaim(s sarama.ConsumerGroupSession, c sarama.ConsumerGroupClaim) error {
	for msg := range c.Messages() {
		m.sink(record{Partition: msg.Partition, Offset: msg.Offset, Key: str(msg.Key), Value: str(msg.Value), Member: m.name})
		s.MarkMessage(msg, "")
	}
	return nil
}

func waitFor(pred func() bool, what string) {
	deadline := time.Now().Add(60 * time.Second)
	for !pred() {
		if time.Now().After(deadline) {
			fail(fmt.Errorf("timed out waiting for %s", what))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func group(cfg *sarama.Config, a args) interface{} {
	var mu sync.Mutex
	first, second := []record{}, []record{}
	phase := &first
	sink := func(r record) {
		mu.Lock()
		*phase = append(*phase, r)
		mu.Unlock()
	}
	count := func(rs *[]record, n int) func() bool {
		return func() bool {
			mu.Lock()
			defer mu.Unlock()
			return len(*rs) >= n
		}
	}
	groups := map[string]sarama.ConsumerGroup{}
	done := map[string]chan struct{}{}
	ctx, cancel := map[string]context.Context{}, map[string]context.CancelFunc{}
	for _, name := range []string{"a", "b"} {
		g, err := sarama.NewConsumerGroup(brokers(a), a.Group, cfg)
		check(err)
		groups[name] = g
		done[name] = make(chan struct{})
		ctx[name], cancel[name] = context.WithCancel(context.Background())
		go func(name string) {
			defer close(done[name])
			for ctx[name].Err() == nil {
				if err := groups[name].Consume(ctx[name], []string{a.Topic}, &member{name, sink}); err != nil {
					fail(err)
				}
			}
		}(name)
		go func(name string) {
			for err := range groups[name].Errors() {
				fmt.Fprintln(os.Stderr, name, err)
			}
		}(name)
	}
	waitFor(count(&first, a.First), "the first records")
	admin, err := sarama.NewClusterAdmin(brokers(a), cfg)
	check(err)
	defer admin.Close()
	desc, err := admin.DescribeConsumerGroups([]string{a.Group})
	check(err)
	described := map[string]interface{}{"state": desc[0].State, "protocol_type": desc[0].ProtocolType, "members": len(desc[0].Members)}
	cancel["b"]()
	<-done["b"]
	check(groups["b"].Close())
	mu.Lock()
	phase = &second
	mu.Unlock()
	produceRecords(config(os.Args[1]), a, a.Second, "none")
	waitFor(count(&second, len(a.Second)), "the second records")
	cancel["a"]()
	<-done["a"]
	check(groups["a"].Close())
	var parts []int32
	seen := map[int32]bool{}
	for _, r := range a.Second {
		if !seen[r.Partition] {
			seen[r.Partition] = true
			parts = append(parts, r.Partition)
		}
	}
	return map[string]interface{}{"first": first, "second": second, "describe": described, "committed": fetched(cfg, a, parts)}
}

func fetched(cfg *sarama.Config, a args, partitions []int32) map[string]int64 {
	client, err := sarama.NewClient(brokers(a), cfg)
	check(err)
	defer client.Close()
	om, err := sarama.NewOffsetManagerFromClient(a.Group, client)
	check(err)
	defer om.Close()
	out := map[string]int64{}
	for _, p := range partitions {
		pom, err := om.ManagePartition(a.Topic, p)
		check(err)
		if offset, _ := pom.NextOffset(); offset >= 0 {
			out[strconv.Itoa(int(p))] = offset
		}
		pom.AsyncClose()
	}
	return out
}

func commit(cfg *sarama.Config, a args) interface{} {
	client, err := sarama.NewClient(brokers(a), cfg)
	check(err)
	defer client.Close()
	om, err := sarama.NewOffsetManagerFromClient(a.Group, client)
	check(err)
	var poms []sarama.PartitionOffsetManager
	for p, offset := range a.Offsets {
		n, err := strconv.Atoi(p)
		check(err)
		pom, err := om.ManagePartition(a.Topic, int32(n))
		check(err)
		pom.MarkOffset(offset, "")
		poms = append(poms, pom)
	}
	for _, pom := range poms {
		pom.AsyncClose()
	}
	// Closing the manager flushes the marked offsets to the coordinator.
	check(om.Close())
	return map[string]interface{}{}
}

func fetchOffsets(cfg *sarama.Config, a args) interface{} {
	return map[string]interface{}{"offsets": fetched(cfg, a, partitionList(a.Partitions))}
}

func main() {
	if len(os.Args) != 4 {
		fail(fmt.Errorf("usage: sarama default|max OP JSON"))
	}
	cfg := config(os.Args[1])
	var a args
	check(json.Unmarshal([]byte(os.Args[3]), &a))
	ops := map[string]func(*sarama.Config, args) interface{}{
		"metadata": metadata, "create_topic": createTopic, "produce": produce, "consume": consume,
		"group": group, "commit": commit, "fetch_offsets": fetchOffsets,
	}
	op, ok := ops[os.Args[2]]
	if !ok {
		fail(fmt.Errorf("unknown operation %s", os.Args[2]))
	}
	out, err := json.Marshal(op(cfg, a))
	check(err)
	fmt.Println(string(out))
}
