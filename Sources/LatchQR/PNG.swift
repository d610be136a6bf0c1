// A minimal PNG encoder (PNG specification, ISO/IEC 15948): greyscale
// images of bit depth 1 or 8, one IDAT chunk holding a zlib stream
// (RFC 1950) of deflate *stored* blocks (RFC 1951 §3.2.4, BTYPE = 00).
// Every scanline uses filter type 0 (None).

enum PNG {
    static let signature: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]

    /// Bytes per scanline, excluding the filter byte.
    static func rowBytes(width: Int, bitDepth: Int) -> Int { (width * bitDepth + 7) / 8 }

    /// Encodes a greyscale image. `scanlines` holds `height` rows of
    /// `rowBytes(width:bitDepth:)` bytes each, pixels packed most significant
    /// bit first (for bit depth 1: 0 = black, 1 = white).
    static func grayscale(width: Int, height: Int, bitDepth: Int, scanlines: [UInt8]) -> [UInt8] {
        precondition(bitDepth == 1 || bitDepth == 8, "unsupported bit depth")
        precondition(width > 0 && height > 0, "empty image")
        let stride = rowBytes(width: width, bitDepth: bitDepth)
        precondition(scanlines.count == stride * height, "scanline data does not match the size")

        var raw: [UInt8] = []
        raw.reserveCapacity((stride + 1) * height)
        for y in 0..<height {
            raw.append(0)  // filter type None
            raw.append(contentsOf: scanlines[(y * stride)..<((y + 1) * stride)])
        }

        var header: [UInt8] = []
        header.appendBigEndian(UInt32(width))
        header.appendBigEndian(UInt32(height))
        header += [UInt8(bitDepth), 0, 0, 0, 0]  // colour type 0 (greyscale), compression 0, filter 0, no interlace

        var png = signature
        appendChunk("IHDR", header, to: &png)
        appendChunk("IDAT", Zlib.stored(raw), to: &png)
        appendChunk("IEND", [], to: &png)
        return png
    }

    /// Chunk layout: length (4, big-endian), type (4), data, CRC-32 of type + data.
    static func appendChunk(_ type: String, _ data: [UInt8], to png: inout [UInt8]) {
        let typeBytes = Array(type.utf8)
        png.appendBigEndian(UInt32(data.count))
        png += typeBytes
        png += data
        png.appendBigEndian(CRC32.checksum(typeBytes + data))
    }
}

/// CRC-32 as used by PNG (and zlib's gzip): reflected polynomial 0xEDB88320,
/// initial value and final XOR 0xFFFFFFFF.
enum CRC32 {
    static let table: [UInt32] = (0..<256).map { n -> UInt32 in
        var c = UInt32(n)
        for _ in 0..<8 { c = (c & 1) != 0 ? 0xEDB8_8320 ^ (c >> 1) : c >> 1 }
        return c
    }

    static func checksum(_ bytes: [UInt8]) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes { crc = table[Int((crc ^ UInt32(byte)) & 0xFF)] ^ (crc >> 8) }
        return crc ^ 0xFFFF_FFFF
    }
}

/// Adler-32 (RFC 1950 §8.2): two sums modulo 65521.
enum Adler32 {
    static func checksum(_ bytes: [UInt8]) -> UInt32 {
        let modulus: UInt32 = 65521
        var a: UInt32 = 1, b: UInt32 = 0
        var index = 0
        while index < bytes.count {
            // 5552 is the largest run that cannot overflow 32 bits before reducing.
            let end = min(index + 5552, bytes.count)
            for i in index..<end {
                a += UInt32(bytes[i])
                b += a
            }
            a %= modulus
            b %= modulus
            index = end
        }
        return (b << 16) | a
    }
}

enum Zlib {
    /// Largest LEN of a stored block (RFC 1951 §3.2.4).
    static let maxStoredBlock = 65_535

    /// A zlib stream (RFC 1950) of uncompressed deflate blocks: header
    /// 0x78 0x01 (deflate, 32 KiB window, no dictionary, FCHECK making the
    /// 16-bit header a multiple of 31), blocks of at most 65,535 bytes each
    /// as [BFINAL | BTYPE=00 padded to a byte][LEN, little-endian][NLEN],
    /// then the Adler-32 of the data, big-endian.
    static func stored(_ data: [UInt8]) -> [UInt8] {
        var out: [UInt8] = [0x78, 0x01]
        out.reserveCapacity(data.count + data.count / maxStoredBlock * 5 + 16)
        var offset = 0
        repeat {
            let length = min(maxStoredBlock, data.count - offset)
            let isFinal = offset + length == data.count
            out.append(isFinal ? 1 : 0)
            let len = UInt16(length)
            out += [UInt8(len & 0xFF), UInt8(len >> 8), UInt8(~len & 0xFF), UInt8(~len >> 8)]
            out += data[offset..<(offset + length)]
            offset += length
        } while offset < data.count
        out.appendBigEndian(Adler32.checksum(data))
        return out
    }
}

extension Array where Element == UInt8 {
    mutating func appendBigEndian(_ value: UInt32) {
        append(UInt8(value >> 24))
        append(UInt8((value >> 16) & 0xFF))
        append(UInt8((value >> 8) & 0xFF))
        append(UInt8(value & 0xFF))
    }
}
