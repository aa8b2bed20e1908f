// swift-tools-version: 6.1
// Eddy's benchmarks: a separate package (NIO's layout) so package-benchmark, its plugins and
// the malloc interposer stay out of the main package graph. Run from the repository root:
//   swift package --package-path Benchmarks benchmark
// See README.md for what each benchmark measures and the targets it is held to.
import PackageDescription

let package = Package(
    name: "EddyBenchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "eddy", path: "../"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        // ordo-one/benchmark, formerly package-benchmark (the old URL and identity still
        // resolve to the same commit but make the plugin print a deprecation warning).
        // MallocInterposer alone: it backs the malloc metrics. The default RuntimeInterposer
        // trait (ARC counting on Linux Swift 6.3) is left off; no benchmark here reports ARC.
        .package(
            url: "https://github.com/ordo-one/benchmark.git", from: "1.38.1", traits: ["MallocInterposer"]),
    ],
    targets: [
        .executableTarget(
            name: "EngineBenchmarks",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "EddyEngine", package: "eddy"),
                .product(name: "EddyStorage", package: "eddy"),
                .product(name: "EddyModel", package: "eddy"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Benchmarks/EngineBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        // EngineWriteProfile, IndexQueryProfile, EventProfile and ReplicationProfile (sources under
        // Profiling/) are targets of the main package (../Package.swift): they need nothing from here.
        // EddyClient figures (issue 12) against REST with async-http-client in the same run;
        // scripts/client-bench.sh drives it.
        .executableTarget(
            name: "ClientProfile",
            dependencies: [
                .product(name: "EddyClient", package: "eddy"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
            ],
            path: "Profiling/ClientProfile"
        ),
    ]
)
