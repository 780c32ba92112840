# One image for every role: `sluice edge`, `sluice worker`, `sluice scheduler`, or `sluice start`.
FROM node:20-bookworm-slim
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund
COPY bin ./bin
COPY services ./services
COPY pipelines ./pipelines
COPY schemas ./schemas
# glibc reads MALLOC_ARENA_MAX at start: 2 malloc arenas, not 8 per core (docs/memory.md).
ENV NODE_ENV=production SLUICE_DATA_DIR=/data MALLOC_ARENA_MAX=2
VOLUME ["/data"]
EXPOSE 8080 8123
ENTRYPOINT ["node", "bin/sluice.js"]
CMD ["start"]
