# One image for every role: `sluice edge`, `sluice worker`, `sluice scheduler`, or `sluice start`.
FROM node:20-bookworm-slim
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund
COPY bin ./bin
COPY services ./services
COPY pipelines ./pipelines
COPY schemas ./schemas
ENV NODE_ENV=production SLUICE_DATA_DIR=/data
VOLUME ["/data"]
EXPOSE 8080 8123
# bin/sluice.js itself, not `node bin/sluice.js`: its first line sets the memory settings read at
# process start (MALLOC_ARENA_MAX, V8's semi-space cap) and execs node as PID 1 (docs/memory.md).
ENTRYPOINT ["/app/bin/sluice.js"]
CMD ["start"]
