import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Readable } from 'node:stream'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { LocalFiles } from '../../pipelines/connectors/files/local-files.ts'

describe('LocalFiles', () => {
  let root: string
  let files: LocalFiles
  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'sluice-files-'))
    files = new LocalFiles(join(root, 'files'))
    await writeFile(join(root, 'secret.txt'), 'outside')
  })
  afterAll(() => rm(root, { recursive: true, force: true }))

  it('writes, lists, reads and removes files', async () => {
    await files.put('exports/a/1.json', Buffer.from('{"a":1}\n'))
    await files.put('exports/a/2.json', Readable.from([Buffer.from('x'), Buffer.from('y')]))
    expect(await files.list('exports')).toEqual(['exports/a/1.json', 'exports/a/2.json'])
    expect((await files.readAll('exports/a/2.json')).toString()).toBe('xy')
    expect(await files.exists('exports/a/1.json')).toBe(true)
    await files.remove('exports/a/1.json')
    expect(await files.exists('exports/a/1.json')).toBe(false)
    expect(await files.list('')).toEqual(['exports/a/2.json'])
  })

  it.each(['../secret.txt', 'a/../../secret.txt', '/etc/passwd', 'a\0b', '..', ''])(
    'refuses the path %j',
    async (path) => {
      expect(() => files.resolvePath(path)).toThrow(/invalid path/)
      await expect(files.readAll(path)).rejects.toThrow(/invalid path/)
      expect(await files.exists(path)).toBe(false)
    },
  )

  it('opens a file to serve with its size; a symbolic link out of the root is refused', async () => {
    await files.put('exports/s/ok.log.gz', Buffer.from('hello'))
    const opened = await files.openRead('exports/s/ok.log.gz')
    expect(opened?.size).toBe(5)
    const parts: Buffer[] = []
    for await (const chunk of opened!.stream) parts.push(chunk as Buffer)
    expect(Buffer.concat(parts).toString()).toBe('hello')
    // A link to a file outside, and a linked directory leading outside: both refused.
    await symlink(join(root, 'secret.txt'), join(root, 'files', 'exports', 's', 'leak.log.gz'))
    await mkdir(join(root, 'outside'), { recursive: true })
    await writeFile(join(root, 'outside', 'x.log.gz'), 'outside')
    await symlink(join(root, 'outside'), join(root, 'files', 'exports', 'dir'))
    expect(await files.openRead('exports/s/leak.log.gz')).toBeUndefined()
    expect(await files.openRead('exports/dir/x.log.gz')).toBeUndefined()
    // A link that stays inside the root is served; a directory or a missing file is not.
    await symlink(
      join(root, 'files', 'exports', 's', 'ok.log.gz'),
      join(root, 'files', 'exports', 's', 'alias.log.gz'),
    )
    expect((await files.openRead('exports/s/alias.log.gz'))?.size).toBe(5)
    expect(await files.openRead('exports/s')).toBeUndefined()
    expect(await files.openRead('exports/s/missing.log.gz')).toBeUndefined()
    await expect(files.openRead('../secret.txt')).resolves.toBeUndefined()
  })
})
