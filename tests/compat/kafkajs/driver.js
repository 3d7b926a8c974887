// kafkajs driver of the compatibility suite: `node driver.js OP 'JSON args'` prints one JSON
// object (the contract is in tests/compat/drivers.py). kafkajs ships gzip only; the other codecs
// are pure-JavaScript libraries plugged into its codec registry, since native ones would need a
// compiler download at install time.
"use strict";

const { Kafka, CompressionTypes, CompressionCodecs, logLevel } = require("kafkajs");
const SnappyJS = require("snappyjs");
const lz4 = require("lz4js");
const zstd = require("@bokuweb/zstd-wasm");

CompressionCodecs[CompressionTypes.Snappy] = () => ({
  async compress(encoder) {
    return Buffer.from(SnappyJS.compress(encoder.buffer));
  },
  async decompress(buffer) {
    return Buffer.from(SnappyJS.uncompress(buffer));
  },
});
// Kafka's LZ4 is the LZ4 frame format.
CompressionCodecs[CompressionTypes.LZ4] = () => ({
  async compress(encoder) {
    return Buffer.from(lz4.compress(encoder.buffer));
  },
  async decompress(buffer) {
    return Buffer.from(lz4.decompress(buffer));
  },
});
CompressionCodecs[CompressionTypes.ZSTD] = () => ({
  async compress(encoder) {
    await zstd.init();
    return Buffer.from(zstd.compress(encoder.buffer, 3));
  },
  async decompress(buffer) {
    await zstd.init();
    return Buffer.from(zstd.decompress(buffer));
  },
});

const CODECS = {
  none: CompressionTypes.None,
  gzip: CompressionTypes.GZIP,
  snappy: CompressionTypes.Snappy,
  lz4: CompressionTypes.LZ4,
  zstd: CompressionTypes.ZSTD,
};

// kafkajs logs to stdout by default; the JSON answer owns stdout.
const toStderr = () => ({ namespace, level, log }) => {
  if (level <= logLevel.WARN) process.stderr.write(`${namespace}: ${JSON.stringify(log)}\n`);
};

// Optional `security`: {ssl: {ca, cert?, key?} (PEM paths), sasl: {mechanism, username,
// password}} (kafkajs's names: plain, scram-sha-256, scram-sha-512).
function securityOptions(security) {
  if (!security) return {};
  const out = {};
  if (security.ssl) {
    const fs = require("fs");
    out.ssl = { ca: [fs.readFileSync(security.ssl.ca, "utf8")] };
    if (security.ssl.cert) {
      out.ssl.cert = fs.readFileSync(security.ssl.cert, "utf8");
      out.ssl.key = fs.readFileSync(security.ssl.key, "utf8");
    }
  }
  if (security.sasl) out.sasl = security.sasl;
  // How long before its SASL session ends kafkajs re-authenticates (KIP-368; 10 s by default).
  if (security.reauthenticationThreshold !== undefined) {
    out.reauthenticationThreshold = security.reauthenticationThreshold;
  }
  return out;
}

function client(args) {
  return new Kafka({
    clientId: "pafka-compat",
    brokers: args.bootstrap.split(","),
    logLevel: logLevel.WARN,
    logCreator: toStderr,
    retry: { retries: 8 },
    ...securityOptions(args.security),
  });
}

function record(message, partition, member) {
  const out = {
    partition,
    offset: Number(message.offset),
    key: message.key === null ? null : message.key.toString("utf8"),
    value: message.value === null ? null : message.value.toString("utf8"),
  };
  if (member !== undefined) out.member = member;
  return out;
}

async function waitFor(predicate, timeoutMs, what) {
  const deadline = Date.now() + timeoutMs;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function metadata(args) {
  const admin = client(args).admin();
  await admin.connect();
  try {
    const cluster = await admin.describeCluster();
    const topics = {};
    const names = args.topics || (await admin.listTopics());
    const meta = await admin.fetchTopicMetadata({ topics: names });
    for (const t of meta.topics) topics[t.name] = t.partitions.length;
    return { brokers: cluster.brokers.map((b) => b.nodeId).sort((a, b) => a - b), topics };
  } finally {
    await admin.disconnect();
  }
}

async function createTopic(args) {
  const admin = client(args).admin();
  await admin.connect();
  try {
    const created = await admin.createTopics({
      topics: [
        {
          topic: args.topic,
          numPartitions: args.partitions,
          replicationFactor: args.replication_factor,
        },
      ],
      waitForLeaders: true,
    });
    return { created };
  } finally {
    await admin.disconnect();
  }
}

async function produceWith(producer, args) {
  await producer.send({
    topic: args.topic,
    compression: CODECS[args.codec || "none"],
    acks: -1,
    messages: args.records.map((r) => {
      const m = { key: r.key, value: r.value };
      if (r.partition !== undefined && r.partition !== null) m.partition = r.partition;
      return m;
    }),
  });
}

async function produce(args) {
  const producer = client(args).producer({ allowAutoTopicCreation: true });
  await producer.connect();
  try {
    await produceWith(producer, args);
    return { produced: args.records.length };
  } finally {
    await producer.disconnect();
  }
}

// kafkajs has no manual assignment: a fresh group reads the partition from the beginning.
async function consume(args) {
  const kafka = client(args);
  // A short fetch wait: disconnecting waits for the fetch in flight.
  const consumer = kafka.consumer({
    groupId: `compat-read-${process.pid}-${Date.now()}`,
    maxWaitTimeInMs: 100,
  });
  const records = [];
  await consumer.connect();
  try {
    await consumer.subscribe({ topic: args.topic, fromBeginning: true });
    await consumer.run({
      autoCommit: false,
      eachMessage: async ({ partition, message }) => {
        if (partition === args.partition && Number(message.offset) >= args.offset) {
          records.push(record(message, partition));
        }
      },
    });
    await waitFor(() => records.length >= args.count, 60000, `${args.count} records`);
    return { records: records.slice(0, args.count) };
  } finally {
    await consumer.disconnect();
  }
}

async function describe(admin, group) {
  const { groups } = await admin.describeGroups([group]);
  const g = groups[0];
  return { state: g.state, protocol_type: g.protocolType, members: g.members.length };
}

async function group(args) {
  const kafka = client(args);
  const admin = kafka.admin();
  await admin.connect();
  const first = [];
  const second = [];
  const members = {};
  let phase = first;
  const joined = new Set();
  for (const name of ["a", "b"]) {
    const consumer = kafka.consumer({
      groupId: args.group,
      sessionTimeout: 10000,
      maxWaitTimeInMs: 100,
    });
    consumer.on(consumer.events.GROUP_JOIN, () => joined.add(name));
    await consumer.connect();
    await consumer.subscribe({ topic: args.topic, fromBeginning: true });
    members[name] = consumer;
  }
  try {
    await Promise.all(
      Object.entries(members).map(([name, consumer]) =>
        consumer.run({
          eachMessage: async ({ partition, message }) => {
            phase.push(record(message, partition, name));
          },
        }),
      ),
    );
    await waitFor(() => first.length >= args.first, 60000, `${args.first} records`);
    const described = await describe(admin, args.group);
    await members.b.disconnect();
    phase = second;
    const producer = kafka.producer();
    await producer.connect();
    await produceWith(producer, { topic: args.topic, records: args.second });
    await producer.disconnect();
    await waitFor(() => second.length >= args.second.length, 60000, "the second records");
    await members.a.disconnect();
    const offsets = await admin.fetchOffsets({ groupId: args.group, topics: [args.topic] });
    const committed = {};
    for (const p of offsets[0].partitions) committed[p.partition] = Number(p.offset);
    return { first, second, describe: described, committed };
  } finally {
    for (const consumer of Object.values(members)) await consumer.disconnect();
    await admin.disconnect();
  }
}

async function commit(args) {
  const admin = client(args).admin();
  await admin.connect();
  try {
    await admin.setOffsets({
      groupId: args.group,
      topic: args.topic,
      partitions: Object.entries(args.offsets).map(([p, o]) => ({
        partition: Number(p),
        offset: String(o),
      })),
    });
    return {};
  } finally {
    await admin.disconnect();
  }
}

async function fetchOffsets(args) {
  const admin = client(args).admin();
  await admin.connect();
  try {
    const offsets = await admin.fetchOffsets({ groupId: args.group, topics: [args.topic] });
    const out = {};
    for (const p of offsets[0].partitions) out[p.partition] = Number(p.offset);
    return { offsets: out };
  } finally {
    await admin.disconnect();
  }
}

async function describeGroup(args) {
  const admin = client(args).admin();
  await admin.connect();
  try {
    return await describe(admin, args.group);
  } finally {
    await admin.disconnect();
  }
}

const OPS = {
  metadata,
  create_topic: createTopic,
  produce,
  consume,
  group,
  commit,
  fetch_offsets: fetchOffsets,
  describe_group: describeGroup,
};

async function main() {
  const [op, json] = process.argv.slice(2);
  if (!OPS[op]) throw new Error(`unknown operation ${op}`);
  const result = await OPS[op](JSON.parse(json));
  process.stdout.write(`${JSON.stringify(result)}\n`);
}

main().then(
  () => process.exit(0),
  (err) => {
    process.stderr.write(`${err.stack || err}\n`);
    process.exit(1);
  },
);
