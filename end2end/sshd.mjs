// A real OpenSSH server for the browser tests, on 127.0.0.1 with fresh keys.
import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync, copyFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import net from 'node:net';

function freePort() {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

function waitForPort(port, ms = 10_000) {
  const deadline = Date.now() + ms;
  return new Promise((resolve, reject) => {
    const attempt = () => {
      const socket = net.connect(port, '127.0.0.1');
      socket.on('connect', () => { socket.destroy(); resolve(); });
      socket.on('error', () => {
        if (Date.now() > deadline) reject(new Error(`sshd did not listen on ${port}`));
        else setTimeout(attempt, 50);
      });
    };
    attempt();
  });
}

export async function startSshd() {
  const dir = mkdtempSync(join(tmpdir(), 'sleuth-sshd-'));
  for (const name of ['client', 'hostkey']) {
    execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', 'sleuth-e2e', '-f', join(dir, name)]);
  }
  copyFileSync(join(dir, 'client.pub'), join(dir, 'authorized_keys'));
  mkdirSync('/run/sshd', { recursive: true });
  const port = await freePort();
  writeFileSync(join(dir, 'sshd_config'), [
    `Port ${port}`, 'ListenAddress 127.0.0.1', `HostKey ${dir}/hostkey`, `PidFile ${dir}/sshd.pid`,
    `AuthorizedKeysFile ${dir}/authorized_keys`, 'StrictModes no', 'UsePAM no', 'PasswordAuthentication no',
    'KbdInteractiveAuthentication no', 'PermitRootLogin prohibit-password', 'LogLevel ERROR',
    'Subsystem sftp internal-sftp',
    // See server/tests/api/sshd.rs: sessions skip the developer's ~/.bashrc.
    'SetEnv SHLVL=1', '',
  ].join('\n'));
  const child = spawn('/usr/sbin/sshd', ['-D', '-e', '-f', join(dir, 'sshd_config')], { stdio: 'ignore' });
  await waitForPort(port);
  const fingerprint = execFileSync('ssh-keygen', ['-lf', join(dir, 'hostkey.pub')], { encoding: 'utf8' }).split(' ')[1];
  const user = execFileSync('id', ['-un'], { encoding: 'utf8' }).trim();
  return { port, dir, key: join(dir, 'client'), fingerprint, user, stop: () => child.kill('SIGKILL') };
}
