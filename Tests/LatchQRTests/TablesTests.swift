import Testing
@testable import LatchQR

@Suite("Tables, format and version information, capacity")
struct TablesTests {
    @Test("format information bits equal the published table for all 32 (level, mask) pairs")
    func formatBits() {
        for level in QRCode.ErrorCorrection.allCases {
            for mask in 0..<8 {
                let bits = QRTables.formatBits(level: level, mask: mask)
                let string = String(bits, radix: 2).leftPadded(to: 15)
                #expect(string == publishedFormatBits[level]![mask], "\(level) mask \(mask)")
            }
        }
        #expect(String(QRTables.formatBits(level: .medium, mask: 0), radix: 2) == "101010000010010")
    }

    @Test("version information: published values and BCH(18,6) structure for 7...40")
    func versionBits() {
        // ISO/IEC 18004 Annex D, Table D.1.
        #expect(String(QRTables.versionBits(7), radix: 2).leftPadded(to: 18) == "000111110010010100")
        #expect(QRTables.versionBits(8) == 0x085BC)
        #expect(QRTables.versionBits(21) == 0x15683)
        #expect(QRTables.versionBits(40) == 0x28C69)
        var seen = Set<Int>()
        for v in 7...40 {
            let bits = QRTables.versionBits(v)
            #expect(bits >> 12 == v)
            #expect(bits < 1 << 18)
            // A codeword of the cyclic code is divisible by the generator.
            #expect(QRTables.bchRemainder(bits, generator: 0x1F25, degree: 12) >> 12 == 0)
            seen.insert(bits)
        }
        #expect(seen.count == 34)
    }

    /// ISO/IEC 18004 Table 1: total codewords per version.
    static let totalCodewords = [
        26, 44, 70, 100, 134, 172, 196, 242, 292, 346, 404, 466, 532, 581, 655, 733, 815, 901, 991, 1085,
        1156, 1258, 1364, 1474, 1588, 1706, 1828, 1921, 2051, 2185, 2323, 2465, 2611, 2761, 2876, 3034, 3196, 3362, 3532, 3706,
    ]

    /// ISO/IEC 18004 Table 1: remainder bits per version.
    static func remainderBits(_ v: Int) -> Int {
        switch v {
        case 1: return 0
        case 2...6: return 7
        case 7...13: return 0
        case 14...20: return 3
        case 21...27: return 4
        case 28...34: return 3
        default: return 0
        }
    }

    @Test("block table: every level sums to the version's total codewords; groups differ by one codeword")
    func blockTableConsistency() {
        for v in 1...40 {
            for level in QRCode.ErrorCorrection.allCases {
                let layout = QRTables.layout(version: v, level: level)
                #expect(layout.totalCodewords == Self.totalCodewords[v - 1], "v\(v) \(level)")
                if layout.group2Blocks > 0 {
                    #expect(layout.group2DataCodewords == layout.group1DataCodewords + 1)
                }
                #expect(layout.group1Blocks > 0)
                #expect(layout.ecCodewordsPerBlock <= 30)
            }
            // Stronger levels never carry more data.
            let data = QRCode.ErrorCorrection.allCases.map { QRTables.layout(version: v, level: $0).dataCodewords }
            #expect(data == data.sorted(by: >))
        }
        // Spot checks against ISO Table 9.
        #expect(QRTables.layout(version: 5, level: .quartile)
            == BlockLayout(ecCodewordsPerBlock: 18, group1Blocks: 2, group1DataCodewords: 15, group2Blocks: 2, group2DataCodewords: 16))
        #expect(QRTables.layout(version: 40, level: .high)
            == BlockLayout(ecCodewordsPerBlock: 30, group1Blocks: 20, group1DataCodewords: 15, group2Blocks: 61, group2DataCodewords: 16))
    }

    @Test("non-function module count = total codewords × 8 + remainder bits, all 40 versions")
    func dataModuleCount() {
        for v in 1...40 {
            let matrix = QRMatrix(version: v)
            #expect(matrix.size == 17 + 4 * v)
            let dataModules = matrix.isFunction.filter { !$0 }.count
            #expect(dataModules == Self.totalCodewords[v - 1] * 8 + Self.remainderBits(v), "v\(v)")
        }
    }

    @Test("alignment pattern coordinates: 6 first, size−7 last, v/7+2 of them, even and evenly spaced")
    func alignmentTable() {
        #expect(QRTables.alignmentCenters[0].isEmpty)
        for v in 2...40 {
            let c = QRTables.alignmentCenters[v - 1]
            #expect(c.count == v / 7 + 2, "v\(v)")
            #expect(c.first == 6)
            #expect(c.last == 17 + 4 * v - 7)
            #expect(c.allSatisfy { $0 % 2 == 0 })
            let gaps = zip(c.dropFirst(), c).map { $0 - $1 }
            if gaps.count > 1 {
                #expect(Set(gaps.dropFirst()).count == 1, "v\(v) gaps \(gaps)")
                // The first gap absorbs the slack and is normally the
                // shorter one; Table E.1's version 32 row is the exception.
                if v == 32 {
                    #expect(c == [6, 34, 60, 86, 112, 138])
                } else {
                    #expect(gaps[0] <= gaps[1], "v\(v) gaps \(gaps)")
                }
            }
        }
        #expect(QRTables.alignmentCenters[39] == [6, 30, 58, 86, 114, 142, 170])
        #expect(QRTables.alignmentCenters[6] == [6, 22, 38])
    }

    @Test("byte-mode capacities (ISO Table 7)", arguments: [
        (1, QRCode.ErrorCorrection.low, 17), (1, .medium, 14), (1, .quartile, 11), (1, .high, 7),
        (2, .medium, 26), (7, .medium, 122), (10, .medium, 213), (10, .low, 271), (20, .quartile, 482),
        (27, .high, 625), (40, .low, 2953), (40, .medium, 2331), (40, .quartile, 1663), (40, .high, 1273),
    ])
    func capacities(version: Int, level: QRCode.ErrorCorrection, bytes: Int) {
        #expect(QRCode.byteCapacity(version: version, errorCorrection: level) == bytes)
    }

    @Test("smallest fitting version is chosen at every capacity boundary")
    func versionSelection() throws {
        for level in QRCode.ErrorCorrection.allCases {
            for v in [1, 2, 6, 7, 9, 10, 26, 27, 39] {
                let capacity = QRCode.byteCapacity(version: v, errorCorrection: level)
                #expect(try QRCode([UInt8](repeating: 0x41, count: capacity), errorCorrection: level).version == v)
                #expect(try QRCode([UInt8](repeating: 0x41, count: capacity + 1), errorCorrection: level).version == v + 1)
            }
        }
        #expect(try QRCode([], errorCorrection: .high).version == 1)
        #expect(try QRCode("hi", minimumVersion: 12).version == 12)
        #expect(try QRCode("hi", minimumVersion: 0).version == 1)
        #expect(try QRCode("hi", minimumVersion: -50).version == 1)
        #expect(try QRCode("hi", minimumVersion: 99).version == 40)
        // minimumVersion never forces a version too small for the payload.
        #expect(try QRCode(Payloads.token(300), minimumVersion: 2).version == 13)
    }

    @Test("payloadTooLong just past the version 40 maximum, for every level")
    func tooLong() throws {
        for level in QRCode.ErrorCorrection.allCases {
            let maximum = QRCode.byteCapacity(version: 40, errorCorrection: level)
            let fits = try QRCode([UInt8](repeating: 0xA5, count: maximum), errorCorrection: level)
            #expect(fits.version == 40)
            #expect(fits.size == 177)
            #expect(throws: QRCode.Failure.payloadTooLong(bytes: maximum + 1, maximum: maximum)) {
                try QRCode([UInt8](repeating: 0xA5, count: maximum + 1), errorCorrection: level)
            }
        }
        #expect(throws: QRCode.Failure.payloadTooLong(bytes: 10_000, maximum: 2331)) {
            try QRCode(String(repeating: "x", count: 10_000), minimumVersion: 40)
        }
        #expect(QRCode.byteCapacity(version: 0, errorCorrection: .low) == 0)
        #expect(QRCode.byteCapacity(version: 41, errorCorrection: .low) == 0)
    }

    @Test("data codewords: mode, count, payload, terminator, pad bytes")
    func dataCodewords() {
        // "Hi" at 1-M: 0100 00000010 01001000 01101001 0000, then pad.
        let words = QRCode.dataCodewords(for: Array("Hi".utf8), version: 1, level: .medium)
        #expect(words == [0x40, 0x24, 0x86, 0x90, 0xEC, 0x11, 0xEC, 0x11, 0xEC, 0x11, 0xEC, 0x11, 0xEC, 0x11, 0xEC, 0x11])
        // 16-bit count from version 10: 0100 0000000000000001 01000001 0000.
        let long = QRCode.dataCodewords(for: [0x41], version: 10, level: .medium)
        #expect(Array(long.prefix(5)) == [0x40, 0x00, 0x14, 0x10, 0xEC])
        #expect(long.count == 216)
        // A full symbol: no room for a terminator beyond the capacity, no pad.
        let full = QRCode.dataCodewords(for: [UInt8](repeating: 0xFF, count: 14), version: 1, level: .medium)
        #expect(full.count == 16)
        #expect(full.last == 0xF0)
    }
}

extension String {
    func leftPadded(to width: Int) -> String {
        String(repeating: "0", count: max(0, width - count)) + self
    }
}
