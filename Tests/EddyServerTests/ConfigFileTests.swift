import EddyEngine
import EddyModel
import Testing

@testable import EddyServer

@Suite struct ConfigFileTests {
    @Test func parsesStringsIntegersBooleansCommentsAndServeTable() throws {
        let text = """
            # sample
            [serve]
            data = "/var/lib/eddy"   # trailing comment
            http = '127.0.0.1:9100'
            request-bytes-max = 1_048_576
            flag = true
            quoted = "a # not a comment \\"x\\""
            """
        let values = try ConfigFile.parse(text, path: "eddy.toml")
        #expect(values["data"] == .string("/var/lib/eddy"))
        #expect(values["http"] == .string("127.0.0.1:9100"))
        #expect(values["request-bytes-max"] == .integer(1_048_576))
        #expect(values["flag"] == .bool(true))
        #expect(values["quoted"] == .string("a # not a comment \"x\""))
    }

    @Test(arguments: [
        ("data", "eddy.toml:1: expected key = value"),
        ("[other]", "unknown table [other]"),
        ("a = 1\na = 2", "eddy.toml:2: a is set twice"),
        ("a = \"open", "unterminated string"),
        ("a = what", "cannot read value what"),
    ])
    func refusesWithFileLineAndReason(text: String, expected: String) {
        #expect {
            try ConfigFile.parse(text, path: "eddy.toml")
        } throws: { error in
            (error as? EddyError)?.message.contains(expected) == true
        }
    }

    @Test func configurationAppliesKnownKeysAndRefusesUnknownOnes() throws {
        var configuration = ServeConfiguration()
        try configuration.apply(
            configFile: ["data": .string("/d"), "http": .string("0.0.0.0:1234"), "durability": .string("batched")],
            path: "f.toml")
        #expect(configuration.dataDirectory == "/d")
        #expect(configuration.httpHost == "0.0.0.0")
        #expect(configuration.httpPort == 1234)
        #expect(configuration.durability == .batched)
        #expect(configuration.effectiveSocketPath == "/d/eddyd.sock")
        #expect(throws: EddyError.self) { try configuration.apply(configFile: ["bogus": .bool(true)], path: "f.toml") }
        #expect(throws: EddyError.self) {
            try configuration.apply(configFile: ["durability": .string("fast")], path: "f.toml")
        }
        #expect(throws: EddyError.self) { try configuration.apply(configFile: ["data": .integer(3)], path: "f.toml") }
    }

    @Test func validateNamesTheOffendingOption() {
        var configuration = ServeConfiguration()
        configuration.requestBytesMax = 10
        #expect {
            try configuration.validate()
        } throws: { error in
            (error as? EddyError)?.message.contains("request-bytes-max 10") == true
        }
        configuration = ServeConfiguration()
        configuration.logLevel = "loud"
        #expect(throws: EddyError.self) { try configuration.validate() }
        configuration = ServeConfiguration()
        configuration.indexBuildChunk = 0
        #expect {
            try configuration.validate()
        } throws: { error in
            (error as? EddyError)?.message.contains("index-build-chunk 0") == true
        }
        configuration = ServeConfiguration()
        configuration.indexBuildPauseMilliseconds = -1
        #expect {
            try configuration.validate()
        } throws: { error in
            (error as? EddyError)?.message.contains("index-build-pause-ms -1") == true
        }
    }

    @Test func streamBufferBoundsComeFromTheConfigFileAndAreChecked() throws {
        var configuration = ServeConfiguration()
        #expect(configuration.streamBufferBytes == 16 << 20 && configuration.streamBuffersBytesTotal == 256 << 20)
        try configuration.apply(
            configFile: ConfigFile.parse("stream-buffer-bytes = 1_048_576\nstream-buffers-bytes-total = 65536\n", path: "t.toml"),
            path: "t.toml")
        #expect(configuration.streamBufferBytes == 1 << 20 && configuration.streamBuffersBytesTotal == 65536)
        try configuration.validate()
        configuration.streamBufferBytes = 1000
        #expect {
            try configuration.validate()
        } throws: { error in
            (error as? EddyError)?.message.contains("stream-buffer-bytes 1000 is out of range 65536...") == true
        }
        configuration = ServeConfiguration()
        configuration.streamBuffersBytesTotal = 1 << 40
        #expect {
            try configuration.validate()
        } throws: { error in
            (error as? EddyError)?.message.contains("stream-buffers-bytes-total 1099511627776 is out of range") == true
        }
        #expect(throws: EddyError.self) {
            try configuration.apply(configFile: ConfigFile.parse("stream-buffer-bytes = \"big\"\n", path: "t.toml"), path: "t.toml")
        }
    }

    @Test func blockCacheBytesComeFromTheConfigFileAndAreChecked() throws {
        var configuration = ServeConfiguration()
        #expect(configuration.blockCacheBytes == 256 << 20)
        try configuration.apply(configFile: ConfigFile.parse("block-cache-bytes = 33_554_432\n", path: "t.toml"), path: "t.toml")
        #expect(configuration.blockCacheBytes == 32 << 20)
        try configuration.validate()
        for bytes in [0, 1000, (1 << 40) + 1] {
            configuration.blockCacheBytes = bytes
            #expect {
                try configuration.validate()
            } throws: { error in
                (error as? EddyError)?.message.contains("block-cache-bytes \(bytes) is out of range 1048576...1099511627776") == true
            }
        }
        #expect {
            try configuration.apply(configFile: ConfigFile.parse("block-cache-bytes = \"1G\"\n", path: "t.toml"), path: "t.toml")
        } throws: { error in
            (error as? EddyError)?.message.contains("block-cache-bytes must be an integer") == true
        }
    }

    @Test func indexBuildOptionsComeFromTheConfigFile() throws {
        var configuration = ServeConfiguration()
        try configuration.apply(
            configFile: ConfigFile.parse("index-build-chunk = 512\nindex-build-pause-ms = 20\n", path: "t.toml"), path: "t.toml")
        #expect(configuration.indexBuildChunk == 512)
        #expect(configuration.indexBuildPauseMilliseconds == 20)
        #expect(throws: EddyError.self) {
            try configuration.apply(configFile: ConfigFile.parse("index-build-chunk = \"many\"\n", path: "t.toml"), path: "t.toml")
        }
    }

    @Test func hostPortParsing() throws {
        #expect(try ServeConfiguration.parseHostPort("127.0.0.1:9000") == ("127.0.0.1", 9000))
        #expect(try ServeConfiguration.parseHostPort("[::1]:80") == ("::1", 80))
        #expect(throws: EddyError.self) { try ServeConfiguration.parseHostPort("localhost") }
        #expect(throws: EddyError.self) { try ServeConfiguration.parseHostPort("h:70000") }
    }
}
