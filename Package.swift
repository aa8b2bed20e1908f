// swift-tools-version: 6.1
// Eddy: a self-hosted, replicated realtime JSON database (Firebase RTDB semantics on RocksDB).
// Dependencies only point downward: Model <- Storage <- Engine <- Server <- eddyd.
import PackageDescription

let swiftSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
    .define("EDDY_INVARIANTS", .when(configuration: .debug)),
]

let package = Package(
    name: "eddy",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "eddyd", targets: ["eddyd"]),
        .executable(name: "eddy", targets: ["eddy"]),
        .library(name: "EddyEngine", targets: ["EddyEngine"]),
        .library(name: "EddyModel", targets: ["EddyModel"]),
        .library(name: "EddyStorage", targets: ["EddyStorage"]),
        .library(name: "EddyTesting", targets: ["EddyTesting"]),
        .library(name: "EddyProtocol", targets: ["EddyProtocol"]),
        // Firebase, FirebaseCore, FirebaseDatabase and FirebaseDatabaseSwift re-export EddyClient, so code
        // written for Firebase compiles with its imports unchanged.
        .library(name: "EddyClient", targets: ["EddyClient", "Firebase", "FirebaseCore", "FirebaseDatabase", "FirebaseDatabaseSwift"]),
        // Firebase's product names, for manifests written as Firebase's Swift Package Manager
        // instructions say (`.product(name: "FirebaseDatabase", package: ...)`).
        .library(name: "FirebaseCore", targets: ["FirebaseCore"]),
        .library(name: "FirebaseDatabase", targets: ["FirebaseDatabase"]),
        .library(name: "FirebaseDatabaseSwift", targets: ["FirebaseDatabaseSwift"]),
        .library(name: "Firebase", targets: ["Firebase"]),
    ],
    dependencies: [
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-extras.git", from: "1.35.2"),
        .package(url: "https://github.com/vapor/jwt-kit.git", from: "5.7.1"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
    ],
    targets: [
        // RocksDB is linked statically (Debian's librocksdb.a, which librocksdb-dev ships; see
        // Sources/CRocksDB/module.modulemap). No `pkgConfig` on purpose: rocksdb.pc would add a
        // `-lrocksdb` that binds every call to the shared library instead. The headers are in
        // /usr/include.
        .systemLibrary(
            name: "CRocksDB",
            providers: [.apt(["librocksdb-dev", "libzstd-dev"])]
        ),
        // zstd for replication snapshots (libzstd-dev, which RocksDB's zstd needs anyway).
        .systemLibrary(name: "CZstd", pkgConfig: "libzstd", providers: [.apt(["libzstd-dev"])]),
        .target(name: "EddyModel", swiftSettings: swiftSettings),
        .target(name: "EddyStorage", dependencies: ["CRocksDB"], swiftSettings: swiftSettings),
        // The on-disk layout the engine's parts share: column families, meta keys, tree reads,
        // storage errors.
        .target(name: "EddyTree", dependencies: ["EddyModel", "EddyStorage"], swiftSettings: swiftSettings),
        // Secondary indexes: definitions, catalog, maintenance, scans, queries, verification.
        // Their own target so the engine reaches them only through what they declare `package`.
        .target(name: "EddyIndexes", dependencies: ["EddyModel", "EddyStorage", "EddyTree"], swiftSettings: swiftSettings),
        // The operation log's entries and their stored encoding (what followers replicate).
        .target(name: "EddyLog", dependencies: ["EddyModel"], swiftSettings: swiftSettings),
        // Live events: the router, listener windows and child events. The engine reaches them only
        // through what they declare `package`, and they read the committer's open group only
        // through `EventGroupReads`.
        .target(
            name: "EddyEvents", dependencies: ["EddyModel", "EddyStorage", "EddyTree", "EddyIndexes", "EddyLog"],
            swiftSettings: swiftSettings),
        .target(
            name: "EddyEngine",
            dependencies: [
                "EddyModel", "EddyStorage", "EddyTree", "EddyIndexes", "EddyLog", "EddyEvents",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Metrics", package: "swift-metrics"),
            ],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "EddyServer",
            dependencies: [
                "EddyEngine", "EddyModel", "EddyProtocol", "EddyReplication", "EddyCluster", "EddyStorage",
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "NIOHTTPTypesHTTP1", package: "swift-nio-extras"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "HummingbirdTLS", package: "hummingbird"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ],
            swiftSettings: swiftSettings
        ),
        .target(name: "EddyTesting", dependencies: ["EddyModel"], swiftSettings: swiftSettings),
        .target(name: "EddyProtocol", dependencies: ["EddyModel"], swiftSettings: swiftSettings),
        // The Swift client: Firebase's Apple API for lists of data, over the native protocol.
        .target(
            name: "EddyClient",
            dependencies: [
                "EddyModel", "EddyProtocol",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            swiftSettings: swiftSettings
        ),
        .target(name: "FirebaseCore", dependencies: ["EddyClient"], path: "Sources/FirebaseShims/FirebaseCore", swiftSettings: swiftSettings),
        .target(name: "Firebase", dependencies: ["EddyClient"], path: "Sources/FirebaseShims/Firebase", swiftSettings: swiftSettings),
        .target(name: "FirebaseDatabase", dependencies: ["EddyClient"], path: "Sources/FirebaseShims/FirebaseDatabase", swiftSettings: swiftSettings),
        .target(
            name: "FirebaseDatabaseSwift", dependencies: ["EddyClient"], path: "Sources/FirebaseShims/FirebaseDatabaseSwift",
            swiftSettings: swiftSettings),
        .target(
            name: "EddyReplication",
            dependencies: [
                "CZstd", "EddyEngine", "EddyModel", "EddyProtocol", "EddyStorage",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: swiftSettings
        ),
        // Cluster membership and leader election on etcd (v3 JSON gateway, blocking calls on
        // the election's own thread).
        .target(
            name: "EddyCluster", dependencies: ["EddyModel", .product(name: "Logging", package: "swift-log")],
            swiftSettings: swiftSettings),
        .executableTarget(
            name: "eddyd",
            dependencies: [
                "EddyServer", "EddyEngine",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "eddy",
            dependencies: [
                "EddyEngine", "EddyModel", "EddyProtocol", "EddyCluster",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "JWTKit", package: "jwt-kit"),
            ],
            swiftSettings: swiftSettings
        ),
        // The profiling drivers of Benchmarks/scripts (sources under Benchmarks/Profiling). They
        // need nothing beyond this package's own dependencies, so they build with it: `make test`
        // builds them in debug for its short run of every script (Benchmarks/scripts/smoke.sh)
        // without compiling the graph a second time. `make build` (eddyd, eddy) leaves them out.
        // Drivers that need package-benchmark or async-http-client stay in Benchmarks/Package.swift.
        .executableTarget(
            name: "EngineWriteProfile",
            dependencies: ["EddyEngine", "EddyStorage", "EddyModel", .product(name: "Logging", package: "swift-log")],
            path: "Benchmarks/Profiling/EngineWriteProfile"
        ),
        .executableTarget(
            name: "IndexQueryProfile",
            dependencies: ["EddyEngine", "EddyStorage", "EddyModel", .product(name: "Logging", package: "swift-log")],
            path: "Benchmarks/Profiling/IndexQueryProfile"
        ),
        .target(name: "FanoutReceipts", path: "Benchmarks/Profiling/FanoutReceipts"),
        .executableTarget(
            name: "EventProfile",
            dependencies: ["EddyEngine", "EddyProtocol", "EddyModel", "FanoutReceipts", .product(name: "Logging", package: "swift-log")],
            path: "Benchmarks/Profiling/EventProfile"
        ),
        .executableTarget(
            name: "ReplicationProfile",
            dependencies: ["EddyProtocol", "EddyModel", "FanoutReceipts"],
            path: "Benchmarks/Profiling/ReplicationProfile"
        ),
        .testTarget(name: "EddyModelTests", dependencies: ["EddyModel", "EddyTesting"], swiftSettings: swiftSettings),
        .testTarget(name: "EddyClusterTests", dependencies: ["EddyCluster", "EddyModel", "EddyTesting"], swiftSettings: swiftSettings),
        .testTarget(name: "EddyStorageTests", dependencies: ["EddyStorage", "EddyTesting"], swiftSettings: swiftSettings),
        .testTarget(
            name: "EddyReplicationTests",
            dependencies: [
                "EddyReplication", "EddyEngine", "EddyProtocol", .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            swiftSettings: swiftSettings),
        .testTarget(
            name: "EddyClientTests",
            dependencies: [
                "EddyClient", "EddyModel", "EddyProtocol", "EddyTesting", "Firebase", "FirebaseCore", "FirebaseDatabase",
                .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio"),
            ],
            swiftSettings: swiftSettings),
        // The runnable example of the README's "Swift client" section (Firebase's lists-of-data guide).
        .executableTarget(name: "eddy-example-lists", dependencies: ["EddyClient"], path: "Examples/ListsOfData"),
        .testTarget(name: "EddyProtocolTests", dependencies: ["EddyProtocol", "EddyModel"], swiftSettings: swiftSettings),
        .testTarget(
            name: "EddyServerTests",
            dependencies: [
                "EddyServer", "EddyEngine", "EddyModel", "EddyTesting", "EddyProtocol", "EddyReplication",
                .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"), .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "NIOHTTPTypesHTTP1", package: "swift-nio-extras"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings),
        .testTarget(
            name: "EddyEngineTests",
            dependencies: ["EddyEngine", "EddyModel", "EddyStorage", "EddyTesting", "EddyTree", "EddyIndexes"],
            swiftSettings: swiftSettings
        ),
    ]
)
