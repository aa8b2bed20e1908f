// A small TOML subset for `eddyd serve --config FILE`: `key = value` lines with string
// ("..." with \" \\ \n \t escapes, or '...'), integer (underscores allowed) and boolean
// values, `#` comments, blank lines, and an optional `[serve]` table header. Anything else is
// refused with the file, line and reason. (Full TOML libraries pull a large C++ build; this
// is all the daemon's options need.)

import EddyModel
import Foundation

public enum ConfigFile {
    public enum Value: Sendable, Equatable {
        case string(String)
        case integer(Int)
        case bool(Bool)
    }

    public static func parse(_ text: String, path: String) throws(EddyError) -> [String: Value] {
        var values: [String: Value] = [:]
        for (index, rawLine) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let where_ = "\(path):\(index + 1)"
            let line = stripComment(String(rawLine)).trimmingSpaces()
            if line.isEmpty { continue }
            if line.hasPrefix("[") {
                guard line == "[serve]" else {
                    throw EddyError(.invalidArgument, "\(where_): unknown table \(line); only [serve] is recognised")
                }
                continue
            }
            guard let eq = line.firstIndex(of: "=") else {
                throw EddyError(.invalidArgument, "\(where_): expected key = value")
            }
            let key = String(line[..<eq]).trimmingSpaces()
            let raw = String(line[line.index(after: eq)...]).trimmingSpaces()
            guard !key.isEmpty, key.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" }) else {
                throw EddyError(.invalidArgument, "\(where_): invalid key \"\(key)\"")
            }
            guard values[key] == nil else { throw EddyError(.invalidArgument, "\(where_): \(key) is set twice") }
            values[key] = try parseValue(raw, at: where_)
        }
        return values
    }

    private static func stripComment(_ line: String) -> String {
        var inString: Character? = nil
        var escaped = false
        for (offset, c) in line.enumerated() {
            if let quote = inString {
                if escaped { escaped = false } else if c == "\\" && quote == "\"" { escaped = true } else if c == quote { inString = nil }
            } else if c == "\"" || c == "'" {
                inString = c
            } else if c == "#" {
                return String(line.prefix(offset))
            }
        }
        return line
    }

    private static func parseValue(_ raw: String, at where_: String) throws(EddyError) -> Value {
        if raw == "true" { return .bool(true) }
        if raw == "false" { return .bool(false) }
        if raw.hasPrefix("'") {
            guard raw.count >= 2, raw.hasSuffix("'") else { throw EddyError(.invalidArgument, "\(where_): unterminated string") }
            return .string(String(raw.dropFirst().dropLast()))
        }
        if raw.hasPrefix("\"") {
            guard raw.count >= 2, raw.hasSuffix("\"") else { throw EddyError(.invalidArgument, "\(where_): unterminated string") }
            var out = ""
            var escaped = false
            for c in raw.dropFirst().dropLast() {
                if escaped {
                    switch c {
                    case "n": out.append("\n")
                    case "t": out.append("\t")
                    case "\\": out.append("\\")
                    case "\"": out.append("\"")
                    default: throw EddyError(.invalidArgument, "\(where_): unsupported escape \\\(c)")
                    }
                    escaped = false
                } else if c == "\\" {
                    escaped = true
                } else {
                    out.append(c)
                }
            }
            return .string(out)
        }
        if let n = Int(raw.replacingOccurrences(of: "_", with: "")) { return .integer(n) }
        throw EddyError(.invalidArgument, "\(where_): cannot read value \(raw); use \"string\", integer or true/false")
    }
}

extension String {
    func trimmingSpaces() -> String {
        var s = Substring(self)
        while let f = s.first, f == " " || f == "\t" || f == "\r" { s = s.dropFirst() }
        while let l = s.last, l == " " || l == "\t" || l == "\r" { s = s.dropLast() }
        return String(s)
    }
}
