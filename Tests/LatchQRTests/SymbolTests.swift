import Testing
@testable import LatchQR

/// Structural checks of finished symbols, written from ISO/IEC 18004 §6.3
/// independently of the drawing code.
enum SymbolCheck {
    /// Problems found in the function patterns and format/version
    /// information of `code`; empty when all is in place.
    static func problems(_ code: QRCode) -> [String] {
        var issues: [String] = []
        let n = code.size
        if n != 17 + 4 * code.version { issues.append("size \(n) for version \(code.version)") }

        // §6.3.3 finder patterns: 7×7 dark ring, light ring, 3×3 dark core;
        // §6.3.4 separators: the light row and column next to each finder.
        for (ox, oy) in [(0, 0), (n - 7, 0), (0, n - 7)] {
            for dy in 0..<7 {
                for dx in 0..<7 {
                    let ring = max(abs(dx - 3), abs(dy - 3))
                    if code[ox + dx, oy + dy] != (ring != 2) {
                        issues.append("finder at (\(ox),\(oy)) module (\(dx),\(dy))")
                    }
                }
            }
            let sx = ox == 0 ? 7 : ox - 1, sy = oy == 0 ? 7 : oy - 1
            for i in -1...7 {
                if code[sx, oy + i] || code[ox + i, sy] {
                    issues.append("separator of finder at (\(ox),\(oy))")
                }
            }
        }

        // §6.3.5 timing patterns between the separators.
        for i in 8..<(n - 8) where code[i, 6] != (i % 2 == 0) || code[6, i] != (i % 2 == 0) {
            issues.append("timing at \(i)")
        }

        // §7.9.1 dark module.
        if !code[8, n - 8] { issues.append("dark module") }

        // §6.3.6 alignment patterns.
        let centers = QRTables.alignmentCenters[code.version - 1]
        for cy in centers {
            for cx in centers {
                let nearFinder = (cx < 10 && cy < 10) || (cx > n - 10 && cy < 10) || (cx < 10 && cy > n - 10)
                if nearFinder { continue }
                for dy in -2...2 {
                    for dx in -2...2 where code[cx + dx, cy + dy] != (max(abs(dx), abs(dy)) != 1) {
                        issues.append("alignment at (\(cx),\(cy))")
                    }
                }
            }
        }

        // §7.9 format information: both copies equal and decode to the
        // symbol's level and mask.
        let (first, second) = readFormatCopies(code)
        if first != second { issues.append("format copies differ: \(first) / \(second)") }
        if let (level, mask) = decodeFormat(first) {
            if level != code.errorCorrection || mask != code.mask {
                issues.append("format decodes to \(level)/\(mask), symbol is \(code.errorCorrection)/\(code.mask)")
            }
        } else {
            issues.append("format bits \(first) are not a valid codeword")
        }

        // §7.10 version information (v ≥ 7): both blocks equal the table.
        if code.version >= 7 {
            var topRight = 0, bottomLeft = 0
            for i in 0..<18 {
                if code[n - 11 + i % 3, i / 3] { topRight |= 1 << i }
                if code[i / 3, n - 11 + i % 3] { bottomLeft |= 1 << i }
            }
            if topRight != QRTables.versionBits(code.version) || bottomLeft != topRight {
                issues.append("version information")
            }
        }
        return issues
    }

    /// Reads the codewords back out of a symbol (§7.7.3 placement order,
    /// §7.8.2 unmasking), de-interleaves them (§7.6) and returns the
    /// per-block data and EC codewords.
    static func readBlocks(_ code: QRCode) -> (data: [[UInt8]], ec: [[UInt8]]) {
        let n = code.size
        var bits: [Bool] = []
        var x = n - 1
        var goingUp = true
        while x > 0 {
            if x == 6 { x -= 1 }
            let rows = goingUp ? Array((0..<n).reversed()) : Array(0..<n)
            for y in rows {
                for column in [x, x - 1] where !code.matrix.isFunctionModule(x: column, y: y) {
                    bits.append(code[column, y] != QRMatrix.maskCondition(code.mask, x: column, y: y))
                }
            }
            goingUp.toggle()
            x -= 2
        }
        let layout = QRTables.layout(version: code.version, level: code.errorCorrection)
        var bytes: [UInt8] = []
        for i in 0..<layout.totalCodewords {
            var byte: UInt8 = 0
            for b in 0..<8 where bits[i * 8 + b] { byte |= 0x80 >> UInt8(b) }
            bytes.append(byte)
        }
        let sizes = layout.dataCodewordsPerBlock
        var data = sizes.map { [UInt8](repeating: 0, count: $0) }
        var ec = sizes.map { _ in [UInt8](repeating: 0, count: layout.ecCodewordsPerBlock) }
        var k = 0
        for i in 0..<(sizes.max() ?? 0) {
            for b in sizes.indices where i < sizes[b] { data[b][i] = bytes[k]; k += 1 }
        }
        for i in 0..<layout.ecCodewordsPerBlock {
            for b in sizes.indices { ec[b][i] = bytes[k]; k += 1 }
        }
        return (data, ec)
    }

    /// Parses a single byte-mode segment from data codewords.
    static func parseByteSegment(_ data: [UInt8], version: Int) -> [UInt8]? {
        var reader = BitReader(bytes: data)
        guard reader.read(4) == 0b0100 else { return nil }
        let count = reader.read(version <= 9 ? 8 : 16)
        guard count * 8 <= data.count * 8 - reader.position else { return nil }
        return (0..<count).map { _ in UInt8(reader.read(8)) }
    }
}

struct BitReader {
    let bytes: [UInt8]
    var position = 0
    mutating func read(_ n: Int) -> Int {
        var value = 0
        for _ in 0..<n {
            let bit = (bytes[position >> 3] >> (7 - UInt8(position & 7))) & 1
            value = value << 1 | Int(bit)
            position += 1
        }
        return value
    }
}

@Suite("Symbol structure and mask selection")
struct SymbolTests {
    @Test("bounded property test: 200 random payloads (0–300 bytes, all levels) have intact function patterns, format info, and read back")
    func randomPayloads() throws {
        var rng = SeededGenerator(seed: 18004)
        var versions = Set<Int>()
        var masks = Set<Int>()
        for caseIndex in 0..<200 {
            let length = Int(rng.next() % 301)
            let payload = Payloads.randomBytes(length, rng: &rng)
            let level = QRCode.ErrorCorrection.allCases[Int(rng.next() % 4)]
            let code = try QRCode(payload, errorCorrection: level)
            versions.insert(code.version)
            masks.insert(code.mask)

            let issues = SymbolCheck.problems(code)
            #expect(issues.isEmpty, "case \(caseIndex) (\(length) bytes, \(level), v\(code.version)): \(issues.prefix(5))")

            // Smallest version that fits.
            #expect(length <= QRCode.byteCapacity(version: code.version, errorCorrection: level))
            if code.version > 1 {
                #expect(length > QRCode.byteCapacity(version: code.version - 1, errorCorrection: level))
            }

            // Data and EC codewords read back from the modules.
            let (data, ec) = SymbolCheck.readBlocks(code)
            let layout = QRTables.layout(version: code.version, level: level)
            for (block, check) in zip(data, ec) {
                #expect(ReedSolomon.errorCorrection(for: block, degree: layout.ecCodewordsPerBlock) == check)
            }
            let decoded = SymbolCheck.parseByteSegment(data.flatMap { $0 }, version: code.version)
            #expect(decoded == payload, "case \(caseIndex): payload does not read back")
        }
        #expect(versions.count >= 10)  // the sample spans many versions
        #expect(masks.count >= 4)
    }

    @Test("every version 1–40 with version information and alignment patterns in place", arguments: Array(1...40))
    func everyVersion(version: Int) throws {
        let payload = Array(Payloads.token(min(40, QRCode.byteCapacity(version: version, errorCorrection: .high))).utf8)
        let code = try QRCode(payload, errorCorrection: .high, minimumVersion: version)
        #expect(code.version == version)
        #expect(SymbolCheck.problems(code).isEmpty)
        let (data, _) = SymbolCheck.readBlocks(code)
        #expect(SymbolCheck.parseByteSegment(data.flatMap { $0 }, version: version) == payload)
    }

    @Test("the bit-parallel penalty the encoder uses equals the module-by-module one on random grids of every symbol size")
    func fastPenaltyAgrees() {
        var rng = SeededGenerator(seed: 11)
        for round in 0..<240 {
            let size = 17 + 4 * (round % 40 + 1) - 4
            let modules = (0..<(size * size)).map { _ in
                // Runs and blocks appear more often than with fair coins.
                round.isMultiple(of: 3) ? Bool.random(using: &rng) : (rng.next() % 5 != 0)
            }
            let grid = QRMatrix(size: size, modules: modules)
            #expect(grid.fastPenalty() == grid.penalty(), "size \(size), round \(round)")
        }
    }

    @Test("chosen mask has the lowest penalty of the eight (first on ties) and is what is drawn")
    func maskChoice() throws {
        var rng = SeededGenerator(seed: 7)
        let cases: [(Int, QRCode.ErrorCorrection)] = [
            (0, .medium), (5, .low), (14, .medium), (40, .high), (100, .quartile), (250, .medium), (600, .low), (1000, .high),
        ]
        for (length, level) in cases {
            let payload = Payloads.randomBytes(length, rng: &rng)
            let code = try QRCode(payload, errorCorrection: level)
            let base = QRCode.unmaskedMatrix(
                codewords: QRCode.codewords(for: payload, version: code.version, level: level), version: code.version)
            let candidates = (0..<8).map { QRCode.masked(base, level: level, mask: $0) }
            let penalties = candidates.map { $0.penalty() }
            let lowest = penalties.min()!
            #expect(penalties[code.mask] == lowest, "penalties \(penalties), chose \(code.mask)")
            #expect(penalties.firstIndex(of: lowest) == code.mask)
            #expect(candidates[code.mask] == code.matrix)
            // Each candidate is a valid symbol carrying its own mask.
            for mask in 0..<8 {
                let forced = try QRCode(payload, errorCorrection: level, minimumVersion: 1, forcedMask: mask)
                #expect(forced.mask == mask)
                #expect(forced.matrix == candidates[mask])
                #expect(SymbolCheck.problems(forced).isEmpty)
            }
        }
    }

    @Test("mask patterns match ISO Table 10 on a 6×6 sample")
    func maskPatterns() {
        // Rows of the top-left 6×6 corner of each pattern, 1 = inverted.
        let expected: [[String]] = [
            ["101010", "010101", "101010", "010101", "101010", "010101"],
            ["111111", "000000", "111111", "000000", "111111", "000000"],
            ["100100", "100100", "100100", "100100", "100100", "100100"],
            ["100100", "001001", "010010", "100100", "001001", "010010"],
            ["111000", "111000", "000111", "000111", "111000", "111000"],
            ["111111", "100000", "100100", "101010", "100100", "100000"],
            ["111111", "111000", "110110", "101010", "101101", "100011"],
            ["101010", "000111", "100011", "010101", "111000", "011100"],
        ]
        for mask in 0..<8 {
            let rows = (0..<6).map { y in String((0..<6).map { x in QRMatrix.maskCondition(mask, x: x, y: y) ? "1" : "0" }) }
            #expect(rows == expected[mask], "mask \(mask)")
        }
    }

    static func grid(_ rows: [String]) -> QRMatrix {
        QRMatrix(size: rows.count, modules: rows.flatMap { $0.map { $0 == "#" } })
    }

    @Test("penalty rules N1–N4 on hand-made grids")
    func penaltyRules() {
        // All dark 21×21: N1 = 42 lines × (3 + 16); N2 = 20×20 blocks × 3;
        // N3 = 0; N4: 100 % dark, k = 10 → 100.
        let dark = QRMatrix(size: 21, modules: Array(repeating: true, count: 441))
        #expect(dark.penaltyAdjacent() == 42 * 19)
        #expect(dark.penaltyBlocks() == 1200)
        #expect(dark.penaltyFinderLike() == 0)
        #expect(dark.penaltyBalance() == 100)
        #expect(dark.penalty() == 798 + 1200 + 100)

        // Checkerboard: no runs, no blocks, balanced (221/441 dark: k = 0).
        let checker = QRMatrix(size: 21, modules: (0..<441).map { ($0 / 21 + $0 % 21) % 2 == 0 })
        #expect(checker.penalty() == 0)

        // A single finder-like row 0000 1011101 0000 on a 11×11 checker-free grid.
        var rows = (0..<11).map { y in String((0..<11).map { x in (x + y) % 2 == 0 ? "#" : "." }) }
        rows[5] = "....#.###.#"
        let finderLike = Self.grid(rows)
        // Row 5: pattern at 4 preceded by 4 light → 40; runs: "...." is 4 (no N1).
        #expect(finderLike.penaltyFinderLike() == 40)
        rows[5] = "#.###.#...."
        #expect(Self.grid(rows).penaltyFinderLike() == 40)
        rows[5] = "#.###.#..#."  // only 2 light after, none before
        #expect(Self.grid(rows).penaltyFinderLike() == 0)

        // N1: runs of exactly 5 and 7 in one row of an otherwise checkered grid.
        var runRows = (0..<12).map { y in String((0..<12).map { x in (x + y) % 2 == 0 ? "#" : "." }) }
        runRows[0] = "#####......."
        let runs = Self.grid(runRows)
        // Row 0 is "#####......." → 5 dark (3) + 7 light (3 + 2) = 8.
        #expect(runs.penaltyAdjacent() == 8)

        // N2: a 3×3 same-colour block contains four 2×2 squares → 12 (= 3·2·2).
        var blockRows = (0..<10).map { y in String((0..<10).map { x in (x + y) % 2 == 0 ? "#" : "." }) }
        for y in 3...5 {
            var chars = Array(blockRows[y])
            for x in 3...5 { chars[x] = "#" }
            blockRows[y] = String(chars)
        }
        #expect(Self.grid(blockRows).penaltyBlocks() == 12)

        // N4 steps of 5 %: 55 % dark → 10, 54 % → 0, 61 % → 20 (on 100 modules).
        func balance(darkCount: Int) -> Int {
            QRMatrix(size: 10, modules: (0..<100).map { $0 < darkCount }).penaltyBalance()
        }
        #expect(balance(darkCount: 50) == 0)
        #expect(balance(darkCount: 54) == 0)
        #expect(balance(darkCount: 55) == 10)
        #expect(balance(darkCount: 45) == 10)
        #expect(balance(darkCount: 61) == 20)
        #expect(balance(darkCount: 0) == 100)
    }

    @Test("subscript outside the symbol is light; no crash on extreme inputs")
    func bounds() throws {
        let code = try QRCode("bounds")
        #expect(code[-1, 0] == false)
        #expect(code[0, code.size] == false)
        #expect(code[Int.max, Int.min] == false)
        #expect(code[0, 0] == true)  // finder corner
    }
}
